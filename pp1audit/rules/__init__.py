"""The claim language: ast-grep rule configs with a role (``model``), judged natively (``engine``)."""
