"""Recipes: one small-scale reproduction per paper of docs/papers.md, each runnable from the CLI."""
