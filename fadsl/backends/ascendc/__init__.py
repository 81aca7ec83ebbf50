"""Ascend C backend: lowering plan -> view model -> Jinja2 templates -> a CANN project."""
