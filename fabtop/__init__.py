"""fabtop core: model, rates, history, rules, snapshot, CLI. Never imports textual."""

__version__ = "0.1.0"
