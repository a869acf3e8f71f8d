"""Validates Home Assistant MQTT discovery configs with Home Assistant's own schemas.

Reads a JSON array of [topic, payload-text] pairs on stdin (the retained messages under the
discovery prefix), validates each payload with
`homeassistant.components.mqtt.<component>.DISCOVERY_SCHEMA`, and fails when one is invalid or
when the schema drops a key we sent (the discovery schemas remove unknown keys silently, so a
misspelled key would otherwise pass). Prints one line per config and a count per component.

Needs the `homeassistant` package (tested with 2024.12.5 in a Python 3.12 virtual environment):
    python3.12 -m venv /opt/ha-venv && /opt/ha-venv/bin/pip install homeassistant==2024.12.5
"""
import importlib
import json
import logging
import sys
from collections import Counter

import homeassistant.const
import voluptuous as vol


def main() -> int:
    # Validating outside a running Home Assistant makes it warn (with stacks) about templates
    # made without `hass`; the schemas themselves are what we check.
    logging.getLogger("homeassistant.helpers.frame").setLevel(logging.ERROR)
    pairs = json.load(sys.stdin)
    counts = Counter()
    failures = 0
    for topic, text in pairs:
        levels = topic.split("/")
        if len(levels) < 4 or levels[-1] != "config":
            print(f"INVALID {topic}: not a discovery config topic (PREFIX/COMPONENT/NODE/OBJECT/config)")
            failures += 1
            continue
        component = levels[-4]
        try:
            payload = json.loads(text)
            schema = importlib.import_module(f"homeassistant.components.mqtt.{component}").DISCOVERY_SCHEMA
            validated = schema(payload)
        except (ValueError, vol.Invalid, ModuleNotFoundError, AttributeError) as error:
            print(f"INVALID {topic}: {error}")
            failures += 1
            continue
        dropped = sorted(set(payload) - set(validated))
        if dropped:
            print(f"INVALID {topic}: keys the schema does not know: {dropped}")
            failures += 1
            continue
        counts[component] += 1
        print(f"valid {component} {topic}")
    summary = ", ".join(f"{n} {c}" for c, n in sorted(counts.items()))
    print(f"home assistant {homeassistant.const.__version__}: {sum(counts.values())} valid ({summary}), {failures} invalid")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
