"""Traffic tests: ib_write_bw per path and both at once, nccl-tests across the nodes, run safely."""
