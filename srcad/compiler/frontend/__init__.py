"""Front end: user function → parsed gast tree → fenced → simple form."""
