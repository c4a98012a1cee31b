"""Stateful detectors and their rules."""
