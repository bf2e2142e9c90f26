"""The translate-and-inspect Gradio demo (transitional)."""
