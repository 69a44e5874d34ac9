"""dhpo_suite.train.verl_backend: DHPO and every baseline inside verl through a plugin."""
