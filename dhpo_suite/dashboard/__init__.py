"""dhpo_suite.dashboard"""
