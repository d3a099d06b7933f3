"""The screens of toolnexus-tui, one module each."""
