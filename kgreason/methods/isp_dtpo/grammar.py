"""ISP's message grammar (paper 002, F.7): exactly one ``<think>`` then exactly one
``<node>``, ``<sparql>`` or ``<answer>`` command. The action space owns it
(:meth:`~kgreason.methods.isp_dtpo.ISPActionSpace.format_ok`); rewards ask the space."""

from __future__ import annotations

import re

_FORMAT = re.compile(r"^\s*<think>(?:(?!<think>|</think>).)+</think>\s*"
                     r"(?:<node>[^<]+</node>|<sparql>(?:(?!</sparql>).)+</sparql>|<answer>(?:(?!</answer>).)+</answer>)\s*$",
                     re.S | re.I)


def one_think_one_command(text: str) -> bool:
    """The strict protocol check.

    >>> one_think_one_command("<think>find the node</think><node>m.0abc</node>")
    True
    >>> one_think_one_command("<think>a</think><node>m.1</node><sparql>SELECT ?x WHERE {}</sparql>")
    False
    >>> one_think_one_command("<node>m.1</node>")
    False
    """
    return bool(_FORMAT.match(text))
