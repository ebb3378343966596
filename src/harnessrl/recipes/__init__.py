"""Recipes: one small-scale reproduction per seed paper, each runnable from the CLI."""
