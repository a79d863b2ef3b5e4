"""Experiments: variants of an agent over a dataset, scored and compared task by task."""
