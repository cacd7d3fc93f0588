"""The chaos suite (`python -m scripts.chaos --profile short|full`): see scripts/chaos/suite.py."""
