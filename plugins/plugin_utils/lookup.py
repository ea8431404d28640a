# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What every lookup of the collection does around its engine, written once (issue 37): :class:`EngineLookup`.

A lookup subclasses it, names itself (``name``, as its messages start) and implements ``evaluate(terms, variables)``:
the keywords are checked first (a misspelled required option is named as a misspelling, not as a missing option), the
options are loaded (``get_option`` then works), and an engine's ``AicrError`` becomes one ``AnsibleLookupError`` line
(prefixed with ``error_prefix``). :meth:`EngineLookup.warn` shows an engine result's ``warnings`` on the controller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import check_lookup_keywords
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

display = Display()


class EngineLookup(LookupBase):
    """A lookup that calls an engine of the collection: keywords checked, options loaded, engine errors in one line."""

    name = "lookup"  # "<plugin> lookup", the start of its messages
    error_prefix = ""  # put before an engine error's msg

    def run(self, terms, variables=None, **kwargs):
        self.check_input(terms, kwargs)
        self.set_options(var_options=variables, direct=kwargs)
        try:
            return self.evaluate(terms, variables or {})
        except AicrError as exc:
            raise AnsibleLookupError(self.error_prefix + exc.msg)

    def check_input(self, terms, kwargs):
        """Refuse a keyword the lookup does not document, naming the nearest (``_common.checks.check_lookup_keywords``)."""
        del terms  # each lookup reads its own terms
        try:
            check_lookup_keywords(self.name, kwargs, self.option_definitions)
        except AicrError as exc:
            raise AnsibleLookupError(exc.msg)

    def evaluate(self, terms, variables):
        """The lookup's result (a list); an ``AicrError`` becomes the lookup's error."""
        raise NotImplementedError

    @staticmethod
    def warn(result):
        """Show the ``warnings`` of an engine's result on the controller (the result keeps them)."""
        for warning in result.get("warnings") or []:
            display.warning(warning)
