# A gloo job that hangs at step 5: rank 1 sleeps in load_batch, every other rank blocks in
# all_reduce waiting for it. Each rank prints "ready" just before it blocks (for the hang
# forensics' tests).
import time

import torch
import torch.distributed as dist


def load_batch(step):
    if dist.get_rank() == 1 and step == 5:
        print("ready", flush=True)
        time.sleep(3600)
    return torch.ones(4)


def main():
    dist.init_process_group("gloo")
    for step in range(10):
        batch = load_batch(step)
        if dist.get_rank() != 1 and step == 5:
            print("ready", flush=True)
        dist.all_reduce(batch)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
