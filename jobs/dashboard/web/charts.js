// Charts with uPlot (the page loads it as the global `uPlot`): a job's metric by rank, and its GPUs'
// utilisation and memory by rank. Each chart follows its container's width.

const PALETTE = ['#2563eb', '#e8590c', '#0ca678', '#ae3ec9', '#f59f00', '#1098ad', '#d6336c', '#5c940d'];
export const colour = (i) => PALETTE[i % PALETTE.length];

function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

function axis(label, extra = {}) {
  const stroke = cssVar('--muted', '#616e7c');
  const grid = cssVar('--grid', '#eef0f3');
  return { label, stroke, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, labelSize: 18, size: 48, ...extra };
}

// A chart in `host` whose series are redrawn from setData; rebuilt when the series change.
export class LineChart {
  constructor(host, { xLabel, yLabel, time = false, height = 240, yRange }) {
    this.host = host;
    this.opts = { xLabel, yLabel, time, height, yRange };
    this.plot = null;
    this.key = '';
    this.resize = new ResizeObserver(() => {
      if (this.plot) this.plot.setSize({ width: this.width(), height: this.opts.height });
    });
    this.resize.observe(host);
  }

  width() { return Math.max(200, this.host.clientWidth); }

  // series: [{label, x: [...], y: [...]}] (each with its own x: joined here); xLabel, when given,
  // replaces the x axis' label (the chart is rebuilt when it changes).
  setData(series, xLabel = this.opts.xLabel) {
    this.opts.xLabel = xLabel;
    const key = [xLabel, ...series.map((s) => s.label)].join('|');
    const data = series.length ? uPlot.join(series.map((s) => [s.x, s.y])) : [[]];
    if (!this.plot || key !== this.key) {
      if (this.plot) this.plot.destroy();
      this.key = key;
      const { xLabel, yLabel, time, height, yRange } = this.opts;
      this.plot = new uPlot({
        width: this.width(),
        height,
        scales: { x: { time }, y: yRange ? { range: yRange } : {} },
        axes: [axis(xLabel, time ? {} : { space: 60 }), axis(yLabel, { size: 56 })],
        legend: { show: false },  // the page draws its own, with the values
        cursor: { drag: { x: true, y: false } },
        series: [{ label: xLabel, value: time ? '{HH}:{mm}:{ss}' : undefined },
          ...series.map((s, i) => ({ label: s.label, stroke: colour(i), width: 2, spanGaps: true, points: { show: s.x.length < 60 } }))],
      }, data, this.host);
    } else {
      this.plot.setData(data);
    }
  }

  destroy() {
    this.resize.disconnect();
    if (this.plot) this.plot.destroy();
    this.plot = null;
  }
}
