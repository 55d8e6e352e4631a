// A job's timeline: its state transitions and its supervisor's events (docs/events.md) as one list,
// oldest first, each in a sentence. GPU samples are not in it (the GPU chart shows them).
import { clock, el, number } from './format.js';

function exit(e) {
  if (e.signal) return `was killed by ${e.signal}${e.oom ? ' (out of memory)' : ''}`;
  return `exited with code ${e.exit_code}`;
}

// The restart budget's decision on a restart (launcher/rendezvous/restart_budget.hpp), when the event has it.
function budget(e) {
  if (e.progress === undefined) return '';
  const reached = e.checkpoint != null ? `checkpoint ${e.checkpoint}` : e.step != null ? `step ${number(e.step, 6)}` : 'nothing';
  const left = e.restarts_left != null ? `, ${e.restarts_left} restart(s) left` : '';
  return e.progress ? ` — progress (${reached})${left}` : ` — no progress (${reached}; ${e.no_progress_restarts} in a row)${left}`;
}

const GAVE_UP = { max_restarts: ' — restart budget spent', no_progress: ' — no progress in a row (--max-no-progress-restarts)' };

// [sentence, tone]: tone is '' | 'good' | 'warn' | 'bad' (the marker's colour).
function describe(e) {
  switch (e.event) {
    case 'started': return [`Supervisor started: world size ${e.world_size}, store ${e.store} on ${e.master_addr}:${e.master_port}`, ''];
    case 'rendezvous_complete': return [e.round !== undefined
      ? `Rendezvous round ${e.round} closed: ${e.nodes} node(s), world size ${e.world_size}`
      : `All ${e.world_size} ranks reached the store (attempt ${e.attempt})`, 'good'];
    case 'rank_started': return [`Rank ${e.rank} started (pid ${e.pid}, attempt ${e.attempt})`, ''];
    case 'rank_exited': return [`Rank ${e.rank} ${exit(e)} (attempt ${e.attempt})`, e.exit_code === 0 && !e.signal ? '' : 'bad'];
    case 'root_cause': return [`Root cause: rank ${e.rank} ${exit(e)} — ${e.role}${e.error ? `: ${e.error}` : ''}`, 'bad'];
    case 'group_stopping': return [`Stopping the worker group (${e.signal}), attempt ${e.attempt}`, 'warn'];
    case 'restarting': return [`Restarting the worker group: attempt ${e.attempt} after attempt ${e.failed_attempt} failed${budget(e)}`, 'warn'];
    case 'restart_timeline': return [`Attempt ${e.attempt}: ${e.summary}`, e.first_progress != null ? 'good' : 'warn'];
    case 'finished': return [`Supervisor finished: ${e.state}, exit code ${e.exit_code} (${e.attempts} attempt(s), ${e.restarts} restart(s))${GAVE_UP[e.gave_up] || ''}`, e.state === 'SUCCEEDED' ? 'good' : 'bad'];
    case 'hang_detected': return [`Hang: rank ${e.suspect} made no progress for ${number(e.silent_s && e.silent_s[0], 3)} s (--hang-timeout ${e.hang_timeout}); silent: ${(e.ranks || []).join(', ')}`, 'bad'];
    case 'straggler': return [`Straggler: rank ${e.rank} at ${number(e.ratio, 2)}× the median step rate (${number(e.rank_step_s, 3)} s/step vs ${number(e.median_step_s, 3)} s/step)`, 'warn'];
    case 'rendezvous_timeout': return [`Rendezvous timed out: ${e.arrived ?? '?'} of ${e.world_size} arrived`, 'bad'];
    case 'node_lost': return [`Node ${e.host} lost after ${number(e.silent_ms / 1000, 3)} s${e.reason ? `: ${e.reason}` : ''}`, 'bad'];
    case 'round_ended': return [`Rendezvous round ${e.round} ended: ${e.reason}`, 'warn'];
    case 'rendezvous_closed': return [`Rendezvous closed: ${e.reason}`, 'warn'];
    case 'timer_expired': return [`Timer ${e.scope_id} of rank ${e.rank} expired${e.signal ? `: ${e.signal} sent to pid ${e.pid}` : ''}`, 'bad'];
    case 'gpu_low_util': return [e.message || `GPU ${e.device} (rank ${e.rank}) at ${number(e.mean_util, 3)} %`, 'warn'];
    case 'filestore_cleaned': return [`Removed a stale FileStore: ${e.path}`, ''];
    case 'swept_predecessor': return [`Stopped ${(e.pids || []).length} process(es) left by an earlier supervisor (pid ${e.supervisor_pid})`, 'warn'];
    default: return [`${e.event}${e.text ? `: ${e.text}` : ''}`, ''];
  }
}

const STATE_TONE = { SUCCEEDED: 'good', FAILED: 'bad', CANCELLED: 'warn', CANCELLING: 'warn', RESTARTING: 'warn' };

export function transitionItem(t) {
  const to = el('strong', {}, t.to);
  return item(t.time, STATE_TONE[t.to] || 'state', [t.from ? `${t.from} → ` : '', to, t.reason ? ` — ${t.reason}` : '']);
}

export function eventItem(e) {
  const [text, tone] = describe(e);
  return item(e.time, tone, [text]);
}

function item(time, tone, content) {
  return el('li', { class: `tl-${tone || 'plain'}`, dataset: { time: time || 0 } },
    el('time', { datetime: time ? new Date(time * 1000).toISOString() : '' }, clock(time)),
    el('span', { class: 'tl-text' }, ...content));
}
