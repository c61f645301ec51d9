"""The upgrade workflow: ``init``, ``pin``, ``diff`` and ``show``."""
