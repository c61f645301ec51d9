"""Text: line spans and anchors, and measured text made safe to print."""
