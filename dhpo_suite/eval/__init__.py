"""dhpo_suite.eval"""
