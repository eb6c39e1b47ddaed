"""``lceval list``: what each paper declares on its ``Benchmark`` is what the user reads."""

from lceval.benchmarks import registry
from lceval.cli import main


def test_list_says_which_papers_need_the_users_data(capsys):
    assert main(["list"]) == 0
    blocks = {}
    for block in ("\n" + capsys.readouterr().out).split("\n")[1:]:
        if not block.startswith(" "):
            key = block.partition(":")[0]
        blocks.setdefault(key, []).append(block)
    needs = {b.key: b.user_data for b in registry.all_benchmarks()}
    assert needs["leval"] and "data_path" in needs["leval"]
    assert needs["lifbench"] is None and needs["ruler"] is None
    for key, data in needs.items():
        said = [line for line in blocks[key] if "needs your data" in line]
        assert said == ([f"  the paper's setting needs your data: {data}"] if data else []), key
