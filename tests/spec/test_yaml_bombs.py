"""YAML that expands far beyond its size (aliases, merge keys) is refused while it is read, in
time bounded by the file's limits; ordinary aliases and merge keys still work."""

from __future__ import annotations

import pytest

from searchsvc.errors import SpecError
from searchsvc.spec import parse_spec
from searchsvc.spec.source import MAX_NODES, read_yaml

HEAD = """\
study: t
objective: objectives.synthetic:playbook
metric: val_loss
mode: min
"""
PARAMETERS = "parameters: {x: {low: 0.0, high: 1.0}}\n"


def refusal(text: str) -> str:
    with pytest.raises(SpecError) as caught:
        parse_spec(text, file="bomb.yaml")
    [issue] = caught.value.issues
    return issue.render()


def laughs(levels: int = 9, width: int = 9) -> list[str]:
    """Billion laughs: each level lists the previous one ``width`` times."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return lines


def test_billion_laughs_of_256_kb_is_refused_at_the_line_where_it_goes_off() -> None:
    text = HEAD + "\n".join(laughs()) + "\n" + PARAMETERS
    text += "# padding\n" * ((256 * 1024 - len(text)) // 10)
    assert 250 * 1024 < len(text) <= 256 * 1024
    # 9^6 = 531441 values: level l5, line 10, is the first past the limit.
    assert refusal(text) == (f"bomb.yaml:10: (file): the file expands to more than {MAX_NODES} "
                             "values (YAML aliases repeat what they name: an alias bomb?)")


def test_a_merge_key_bomb_is_refused() -> None:
    """`<<` merges copy whole mappings: nested, they multiply like aliases (PyYAML's own merge
    builds them all before anything counts). The anchors hide under duplicate keys, which are
    reported but never read, so only the last line expands them."""
    lines = [f"dup: &m0 {{{', '.join(f'k{i}: {i}' for i in range(9))}}}"]
    lines += [f"dup: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * 9)}]}}" for i in range(1, 12)]
    text = HEAD + "\n".join(lines) + "\nboom: *m11\n" + PARAMETERS
    assert refusal(text).startswith(f"bomb.yaml:17: (file): the file expands to more than "
                                    f"{MAX_NODES} values")


def test_a_file_of_plain_values_over_the_limit_says_so_without_blaming_aliases() -> None:
    text = HEAD + "description: [" + ", ".join(["1"] * MAX_NODES) + "]\n" + PARAMETERS
    assert refusal(text) == (f"bomb.yaml:5: (file): the file holds more than {MAX_NODES} "
                             "values; a study file needs far fewer")


def test_a_recursive_alias_is_refused() -> None:
    assert "document is recursive" in refusal(HEAD + "description: &d [1, [2, *d]]\n"
                                              + PARAMETERS)


def test_a_number_too_long_for_python_is_an_issue_not_a_crash() -> None:
    text = HEAD + f"budget: {{trials: 1{'0' * 5000}}}\n" + PARAMETERS
    assert refusal(text) == "bomb.yaml:5: budget.trials: integer is too long (5001 characters)"


def test_ordinary_aliases_and_merge_keys_still_work() -> None:
    spec = parse_spec(HEAD + """\
searcher: random
budget: {trials: 4}
parameters:
  depth: &choice {role: scientific, values: &sizes [1, 2, 3]}
  width: {<<: *choice, values: *sizes}
  lr: &lr {low: 1.0e-4, high: 1.0e-1, scale: log}
  decay: {<<: [*lr, {scale: linear}], high: 0.5}
""")
    assert spec.parameters["width"].values == (1, 2, 3)
    assert spec.parameters["width"].role == "scientific"
    decay = spec.parameters["decay"]
    # keys written beside `<<` win over merged ones; of merged mappings, the first listed wins
    assert (decay.low, decay.high, decay.scale) == (1e-4, 0.5, "log")


def test_aliases_within_the_limit_are_expanded_in_full() -> None:
    data, _, issues = read_yaml("\n".join(laughs(levels=5, width=9)))  # 9^5 = 59049 values
    assert not issues and len(data["l4"]) == 9 and data["l4"][8][8][8][8] == ["lol"] * 9


def test_a_merge_of_something_not_a_mapping_is_an_issue() -> None:
    _, _, issues = read_yaml("a: {<<: 5, b: 1}\n")
    assert [(i.field, i.line, i.message) for i in issues] == [
        ("a", 1, "`<<` (a YAML merge key) takes a mapping or a list of mappings")]
