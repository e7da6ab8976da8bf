"""``python -m promptx`` runs the command-line interface."""

from .cli.main import run

if __name__ == "__main__":
    run()
