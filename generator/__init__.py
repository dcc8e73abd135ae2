"""actgen: IsaSpec -> jinja2 templates -> a generated backend package."""
