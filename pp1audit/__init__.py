"""pp1audit: make a source audit executable.

A manifest pins what an audit claims about an installed package (its version,
file digests, cited line spans, code invariants, provenance); ``pp1audit check``
measures a target against it and gates on the result.
"""

__version__ = "0.1.0"
