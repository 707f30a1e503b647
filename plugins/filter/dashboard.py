# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The queries of a Grafana dashboard, ready to run against Prometheus (docs/observability.md)."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

# Grafana's own interval variables, set to what a query over a short lab window needs: $__rate_interval is at least
# four scrape intervals in Grafana, so 1m covers 15 s scrapes; $__interval is one step of the graph.
BUILTINS = {'__rate_interval': '1m', '__interval': '15s'}

# $name, ${name} and ${name:format}; Grafana's deprecated [[name]] is found too, so that it is refused rather
# than sent to Prometheus as is
_VARIABLE = re.compile(r'\$(\w+)|\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]')
# Grafana's legend template: {{name}}, spaces allowed inside the braces
_LEGEND_LABEL = re.compile(r'\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}')


def _panels(panels):
    """Every panel in document order, a row's nested panels (a collapsed row keeps them inside) after the row."""
    for panel in panels or []:
        if not isinstance(panel, dict):
            raise AnsibleFilterError('dashboard_queries: a panel is not an object: %r' % (panel,))
        yield panel
        yield from _panels(panel.get('panels'))


def _default_variables(dashboard):
    """Each query variable matches everything, as its "All" does with allValue .*, plus the interval builtins."""
    values = dict(BUILTINS)
    for variable in (dashboard.get('templating') or {}).get('list') or []:
        if isinstance(variable, dict) and variable.get('type') == 'query' and variable.get('name'):
            values[variable['name']] = '.*'
    return values


def _substitute(expr, values, title):
    def replace(match):
        name = match.group(1) or match.group(2) or match.group(3)
        # $1 and ${1} in label_replace's replacement are capture groups, not variables; Grafana leaves them alone too
        if not match.group(3) and name.isdigit():
            return match.group(0)
        if name not in values:
            known = ', '.join(sorted(values))
            raise AnsibleFilterError('dashboard_queries: panel %r: the variable %s is left in %r (known: %s)' % (title, match.group(0), expr, known))
        return values[name]

    return _VARIABLE.sub(replace, expr)


def dashboard_queries(dashboard, variables=None):
    """``[{panel, ref_id, expr, labels}]``: every target of every panel, rows' nested panels included, its expr with
    the variables substituted and the label names its legendFormat shows. ``variables`` adds to or overrides the
    defaults (each query variable ``.*``, ``$__rate_interval`` 1m, ``$__interval`` 15s)."""
    if not isinstance(dashboard, dict):
        raise AnsibleFilterError('dashboard_queries: expected the dashboard as an object (from_json), got %s' % type(dashboard).__name__)
    if variables is not None and not isinstance(variables, dict):
        raise AnsibleFilterError('dashboard_queries: variables must be a dict, got %s' % type(variables).__name__)
    values = _default_variables(dashboard)
    for name, value in (variables or {}).items():
        # one value as Grafana would send it (a multi-value is the caller's regex, e.g. "(a|b)"); a list or a dict
        # would be pasted into PromQL as Python's repr
        if isinstance(value, (dict, list, tuple, set)) or value is None:
            raise AnsibleFilterError('dashboard_queries: variable %s must be a string or a number, got %r' % (name, value))
        values[name] = str(value)
    queries = []
    for panel in _panels(dashboard.get('panels')):
        title = panel.get('title') or 'panel id %s' % panel.get('id')
        for target in panel.get('targets') or []:
            ref_id = target.get('refId', '')
            expr = target.get('expr')
            legend = target.get('legendFormat')
            # a target without both cannot be checked: no query to run, or no labels to expect from it
            if not isinstance(expr, str) or not expr.strip():
                raise AnsibleFilterError('dashboard_queries: panel %r, target %r has no expr' % (title, ref_id))
            if not isinstance(legend, str) or not legend.strip():
                raise AnsibleFilterError('dashboard_queries: panel %r, target %r has no legendFormat, so its labels are unknown' % (title, ref_id))
            queries.append(
                {
                    'panel': title,
                    'ref_id': ref_id,
                    'expr': _substitute(expr, values, title),
                    'labels': sorted(set(_LEGEND_LABEL.findall(legend))),
                }
            )
    return queries


class FilterModule(object):
    def filters(self):
        return {'dashboard_queries': dashboard_queries}
