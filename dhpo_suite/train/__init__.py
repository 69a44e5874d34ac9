"""dhpo_suite.train"""
