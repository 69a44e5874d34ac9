"""Harnesses for tests and benchmarks, not used by the product (nothing else in dhpo_suite imports them).

- `verl_worker`: verl's real actor worker (FSDP2 engine, optimizer, the plugin's loss) driven without Ray's
  trainer, with the batches verl's trainers send (`LocalCase`, `run_local`, `run_distributed`);
- `verl_v1_feed`: verl's v1 trainer batch path (TransferQueue) in one process, for `verl_worker`.
- `load`: deadlines scaled by the measured slowdown of a busy machine (`scaled(240)`), for tests that wait;
- `synthetic_runs`: realistic fake run directories in the trainer's real format (dashboard and tracking tests,
  the dashboard demo, benchmarks/dashboard.py);
- `grading_rewrites`: equivalent rewrites and near misses of gold answers (the grader's tests and benchmark).

They import verl's internals freely (they stand in for verl's trainer); the backend itself touches verl only
through `dhpo_suite/train/verl_backend/seam/`. They live here rather than under `tests/` because spawned
worker processes import them by module name, and `tests` is taken by verl's own test package in site-packages.
"""
