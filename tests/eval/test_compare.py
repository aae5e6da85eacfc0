"""Run comparison by question type, on hand-written eval rows."""

from __future__ import annotations

import json

import pytest

from kgreason.eval.compare import compare, load_rows, main


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_only_shared_questions_and_chosen_groups(tmp_path, capsys):
    a = write(tmp_path / "a.jsonl", [{"id": "1", "qtype": "2-hop", "f1": 1.0},
                                     {"id": "2", "qtype": "CVT", "f1": 0.0},
                                     {"id": "9", "qtype": "2-hop", "f1": 1.0}])  # not in b: left out
    b = write(tmp_path / "b.jsonl", [{"id": "1", "qtype": "2-hop", "f1": 0.0},
                                     {"id": "2", "qtype": "CVT", "f1": 0.5}])
    table = compare({"a": load_rows(a), "b": load_rows(b)}, groups=["2-hop", "cvt", "superlative"])
    assert [(r["group"], r["n"]) for r in table] == [("all", 2), ("2-hop", 1), ("cvt", 1), ("superlative", 0)]
    assert table[0]["a"] == 0.5 and table[0]["b"] == 0.25
    assert table[2]["b"] == 0.5
    named_all = compare({"a": load_rows(a), "b": load_rows(b)}, groups=["all", "cvt"])
    assert [(r["group"], r["n"]) for r in named_all] == [("all", 2), ("cvt", 1)]
    assert main([f"a={a}", f"b={b}", "--groups", "2-hop"]) == 0
    assert "| 2-hop | 1 | 1.000 | 0.000 |" in capsys.readouterr().out


def test_disjoint_runs_are_an_error(tmp_path):
    a = write(tmp_path / "a.jsonl", [{"id": "1", "qtype": "x", "f1": 1.0}])
    b = write(tmp_path / "b.jsonl", [{"id": "2", "qtype": "x", "f1": 1.0}])
    with pytest.raises(ValueError, match="share no question"):
        compare({"a": load_rows(a), "b": load_rows(b)})


def test_by_hops_and_the_curve_across_runs(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    rows = [{"id": "1", "hops": 1, "hit1": 1.0}, {"id": "2", "hops": 2, "hit1": 0.0}, {"id": "3", "hops": 2, "hit1": 0.0}]
    later = [{**r, "hit1": 1.0} if r["id"] == "2" else r for r in rows]
    a, b = write(tmp_path / "a.jsonl", rows), write(tmp_path / "b.jsonl", later)
    fig = tmp_path / "curve.png"
    assert main([f"step0={a}", f"step10={b}", "--by", "hops", "--metric", "hit1", "--plot", str(fig)]) == 0
    out = capsys.readouterr().out
    assert "| 2-hop | 2 | 0.000 | 0.500 |" in out and "| 1-hop | 1 | 1.000 | 1.000 |" in out
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and fig.stat().st_size > 5000


def test_plot_names_the_missing_extra(monkeypatch, tmp_path):
    import builtins

    real = builtins.__import__

    def no_matplotlib(name, *a, **k):
        if name == "matplotlib":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    from kgreason.errors import KGReasonError
    from kgreason.eval.compare import plot

    with pytest.raises(KGReasonError, match=r"kgreason\[runner\]"):
        plot([{"group": "all", "n": 1, "a": 1.0}], ["a"], tmp_path / "x.png")


def test_a_run_read_at_its_own_metric(tmp_path, capsys):
    greedy = write(tmp_path / "g.jsonl", [{"id": "1", "qtype": "2-hop", "f1": 0.0}, {"id": "2", "qtype": "1-hop", "f1": 1.0}])
    sampled = write(tmp_path / "s.jsonl", [{"id": "1", "qtype": "2-hop", "f1": 0.2, "pass_f1": 1.0},
                                           {"id": "2", "qtype": "1-hop", "f1": 1.0, "pass_f1": 1.0}])
    assert main([f"greedy={greedy}", f"pass@8={sampled}:pass_f1"]) == 0
    out = capsys.readouterr().out
    assert "greedy f1 | pass@8 pass_f1" in out and "| 2-hop | 1 | 0.000 | 1.000 |" in out
    with pytest.raises(ValueError, match="no metric 'pass_f1'.*'f1'"):
        compare({"g": load_rows(greedy)}, metric="pass_f1")
