#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""contrib/grafana/tdstat-dashboard.json is importable as is: the fields
of Grafana's dashboard schema that an import needs (uid, title,
schemaVersion, panels with ids, types, grid positions and targets), a
data source placeholder declared in __inputs and used by every panel and
variable, variables that the queries use defined, and only metric names
that tdstat really exports (read from a live target's OpenMetrics)."""

import json
import os
import re
import unittest

from prometheus_client.openmetrics.parser import text_string_to_metric_families

import fleet

DASHBOARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "contrib",
                         "grafana", "tdstat-dashboard.json")
PLACEHOLDER = "${DS_PROMETHEUS}"
GRAFANA_VARIABLES = {"__rate_interval", "__interval", "__range"}
PROMQL_WORDS = {"rate", "sum", "by", "label_values", "query_result", "instance", "pid", "comm", "kind"}


def load():
    with open(DASHBOARD) as source:
        return json.load(source)


def panel_expressions(dashboard):
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def variable_queries(dashboard):
    return [variable["query"]["query"] for variable in dashboard["templating"]["list"]]


class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dashboard = load()

    def test_top_level(self):
        d = self.dashboard
        self.assertRegex(d["uid"], r"^[A-Za-z0-9_-]{1,40}$")
        self.assertTrue(d["title"])
        self.assertIsInstance(d["schemaVersion"], int)
        self.assertGreaterEqual(d["schemaVersion"], 30)
        self.assertNotIn("id", d, "an exported dashboard has no id: import assigns one")
        inputs = {i["name"]: i for i in d["__inputs"]}
        self.assertEqual(inputs["DS_PROMETHEUS"]["type"], "datasource")
        self.assertEqual(inputs["DS_PROMETHEUS"]["pluginId"], "prometheus")
        required = {(r["type"], r["id"]) for r in d["__requires"]}
        self.assertIn(("datasource", "prometheus"), required)
        for panel in d["panels"]:
            self.assertIn(("panel", panel["type"]), required)

    def test_panels(self):
        ids = [panel["id"] for panel in self.dashboard["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
        self.assertGreaterEqual(len(ids), 4)
        for panel in self.dashboard["panels"]:
            self.assertTrue(panel["title"])
            grid = panel["gridPos"]
            for key in ("x", "y", "w", "h"):
                self.assertIsInstance(grid[key], int, (panel["title"], key))
            self.assertLessEqual(grid["x"] + grid["w"], 24, panel["title"])
            self.assertEqual(panel["datasource"], {"type": "prometheus", "uid": PLACEHOLDER})
            self.assertTrue(panel["targets"], panel["title"])
            refs = [target["refId"] for target in panel["targets"]]
            self.assertEqual(len(refs), len(set(refs)), panel["title"])
            for target in panel["targets"]:
                self.assertEqual(target["datasource"]["uid"], PLACEHOLDER)
                self.assertTrue(target["expr"].strip())

    def test_variables(self):
        variables = self.dashboard["templating"]["list"]
        defined = {v["name"] for v in variables} | GRAFANA_VARIABLES
        for v in variables:
            self.assertEqual(v["datasource"]["uid"], PLACEHOLDER, v["name"])
        for text in panel_expressions(self.dashboard) + variable_queries(self.dashboard):
            for used in re.findall(r"\$(\w+)", text):
                self.assertIn(used, defined, text)

    def test_families_are_tdstat_families(self):
        """Every metric name the queries use is one tdstat exports."""
        with fleet.Target(sleepers=1) as target:
            text = fleet.tdstat("-c", "1", "--format", "openmetrics", target.pid).stdout
        exported = set()
        for family in text_string_to_metric_families(text):
            exported.update(sample.name for sample in family.samples)
        self.assertIn("tdstat_runnable_seconds_total", exported)
        used = set()
        for text in panel_expressions(self.dashboard) + variable_queries(self.dashboard):
            text = re.sub(r'"[^"]*"', '""', text)   # label values
            text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
            used.update(word for word in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text)
                        if word not in PROMQL_WORDS and not word.startswith("__"))
        self.assertTrue(used)
        self.assertLessEqual(used, exported, "unknown metrics: %s" % (used - exported))


if __name__ == "__main__":
    unittest.main(verbosity=2)
