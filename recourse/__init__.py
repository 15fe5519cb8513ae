"""Auditing how compressed CelebA attribute classifiers change predictions and recourse."""

__version__ = "0.1.0"
