"""lm-eval task YAMLs for the paper benchmarks (use with `lm_eval --include_path dhpo_suite/eval/lm_eval_tasks`)."""
