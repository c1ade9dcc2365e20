"""Analyses over the simple form: which values carry derivatives."""
