"""Reports: self-contained HTML with embedded matplotlib figures."""
