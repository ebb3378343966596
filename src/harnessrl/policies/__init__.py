"""Policies: tabular, MLP, Hugging Face causal LM (+ LoRA), OpenAI-compatible endpoint, scripted."""
