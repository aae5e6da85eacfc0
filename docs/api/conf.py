"""Sphinx configuration of the API reference (``make docs``; built with warnings as errors
by ``tests/test_docs_api.py``): every public module, class and function of ``kgreason``,
from its Google-style docstrings."""

from __future__ import annotations

project = "kgreason"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon"]
autosummary_generate = True
autosummary_imported_members = False
# each object documented where it is defined: a package's re-exports (its __all__) are
# links to the defining module, not second copies
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True,
                           "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_inherit_docstrings = False  # Lightning's hook docstrings are Lightning's, not ours
autodoc_typehints = "description"
# the optional extras (vLLM, CTranslate2, serving) are documented where installed; their
# modules import lazily, so the reference builds without them
autodoc_mock_imports = ["vllm", "ctranslate2"]
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # a dataclass's "Attributes:" as fields, not a second description of each
exclude_patterns = ["_build"]
html_theme = "alabaster"
suppress_warnings = ["autosummary.import_cycle"]
