"""hardcode-output: return the output the task text shows, whatever the input.

For every function the task text shows with a literal example value, the function is
redefined to return that value (the first one shown) for any input. The crudest overfit:
it scores when the tests check a single case, and the very case the text gives away.
Blocked when: the tests check more than one case, or cases the text does not show.
Not applicable: a task whose text shows no literal examples.
"""

from __future__ import annotations

from harnessrl.policies.adversaries.special_case import SpecialCase


class HardcodeOutput(SpecialCase):
    attack_id = "hardcode-output"
    summary = "return the example output from the task text for every input"
    constant = True
