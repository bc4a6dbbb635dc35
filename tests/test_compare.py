"""pagelab compare on two synthetic runs whose answers are known: a time that doubled is
slower, a rate that doubled is faster, a count that moved is different, noise within the band
is the same, and Holm's correction keeps a family of null metrics from crying change."""

import json

import numpy as np
import pandas as pd
import pytest

from pagelab.analysis import compare
from pagelab.cli import main


def write_run(d, rng, scale_time=1.0, scale_rate=1.0, shift_count=0, n=8):
    rows = []
    for i in range(n):
        for arm in ("a", "b"):
            rows.append({"trial_id": f"{arm}-r{i}", "order": len(rows), "warmup": False, "status": "ok",
                         "valid": True, "invalid_reason": "", "arm": arm, "seed": i, "start": "s", "end": "e",
                         "retouch_s": scale_time * rng.normal(1.0, 0.01),
                         "pagein_mbps": scale_rate * rng.normal(100, 1),
                         "pswpin": 1000 + shift_count + int(rng.integers(0, 3)),
                         **{f"null{k}": rng.normal(10, 1) for k in range(20)}})
    # An invalid trial is never compared.
    rows.append({**rows[0], "trial_id": "a-bad", "valid": False, "invalid_reason": "evicted 1 %",
                 "retouch_s": 1e6})
    (d / "toy").mkdir(parents=True)
    pd.DataFrame(rows).to_csv(d / "toy" / "trials.csv", index=False)
    (d / "toy" / "config.json").write_text("{}")


def test_known_changes_and_a_quiet_family(tmp_path):
    rng = np.random.default_rng(7)
    write_run(tmp_path / "A", rng)
    write_run(tmp_path / "B", rng, scale_time=2.0, scale_rate=2.0, shift_count=500)
    rows = {(r.configuration, r.metric): r for r in compare.compare(tmp_path / "A", tmp_path / "B")}
    assert rows[("arm=a", "retouch_s")].word == "slower"
    assert rows[("arm=a", "retouch_s")].ratio == pytest.approx(2.0, rel=0.05)
    assert rows[("arm=a", "retouch_s")].n_a == 8  # the invalid trial is not counted
    assert rows[("arm=b", "pagein_mbps")].word == "faster"
    assert rows[("arm=a", "pswpin")].word == "different"
    nulls = [r for (c, m), r in rows.items() if m.startswith("null")]
    assert len(nulls) == 40 and all(r.word == "same" for r in nulls)
    assert all(r.p_holm >= r.p for r in rows.values())


def test_a_change_inside_the_noise_band_is_the_same(tmp_path):
    rng = np.random.default_rng(3)
    write_run(tmp_path / "A", rng, n=12)
    write_run(tmp_path / "B", rng, scale_time=1.03, n=12)  # 3 %: significant, but inside 5 %
    r = {(x.configuration, x.metric): x for x in compare.compare(tmp_path / "A", tmp_path / "B")}
    assert r[("arm=a", "retouch_s")].p_holm < 0.05 and r[("arm=a", "retouch_s")].word == "same"
    r = {(x.configuration, x.metric): x for x in compare.compare(tmp_path / "A", tmp_path / "B", noise=0.005)}
    assert r[("arm=a", "retouch_s")].word == "slower"


def test_cli_formats_and_errors(tmp_path, capsys):
    rng = np.random.default_rng(1)
    write_run(tmp_path / "A", rng)
    write_run(tmp_path / "B", rng, scale_time=2.0)
    assert main(["compare", str(tmp_path / "A"), str(tmp_path / "B"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["noise"] == 0.05 and any(r["word"] == "slower" for r in doc["rows"])
    assert main(["compare", str(tmp_path / "A"), str(tmp_path / "B"), "--format", "tex",
                 "--output", str(tmp_path / "c.tex")]) == 0
    assert "\\toprule" in (tmp_path / "c.tex").read_text()
    assert (tmp_path / "c.pdf").read_bytes().startswith(b"%PDF") and (tmp_path / "c.png").stat().st_size > 0
    assert main(["compare", str(tmp_path / "A"), str(tmp_path / "B")]) == 0
    assert "slower" in capsys.readouterr().out
    # bad input: exit 2, one line naming the directory
    assert main(["compare", str(tmp_path / "A"), str(tmp_path / "nowhere")]) == 2
    assert "nowhere: not a directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["compare", str(tmp_path / "A"), str(tmp_path / "empty")]) == 2
    assert "empty: holds no run" in capsys.readouterr().err
    write_run(tmp_path / "C", rng)
    (tmp_path / "C" / "toy").rename(tmp_path / "C" / "other")
    assert main(["compare", str(tmp_path / "A"), str(tmp_path / "C")]) == 2
    assert "no experiment in common" in capsys.readouterr().err


def test_one_measurement_scaled_by_one_and_a_half_is_the_only_change_at_five_trials(tmp_path):
    rng = np.random.default_rng(11)
    write_run(tmp_path / "A", rng, n=5)
    frame = pd.read_csv(tmp_path / "A/toy/trials.csv")
    (tmp_path / "B/toy").mkdir(parents=True)
    (tmp_path / "B/toy/config.json").write_text("{}")
    scaled = frame.copy()
    scaled.loc[scaled["arm"] == "b", "null3"] *= 1.5
    scaled.to_csv(tmp_path / "B/toy/trials.csv", index=False)
    rows = compare.compare(tmp_path / "A", tmp_path / "B")
    changed = [(r.configuration, r.metric, r.word) for r in rows if r.word != "same"]
    assert changed == [("arm=b", "null3", "different")]
    assert all(r.word == "same" for r in compare.compare(tmp_path / "A", tmp_path / "A"))


def test_the_figure_shows_every_comparison_by_experiment_in_its_words_colour(tmp_path):
    """One dot per comparison at its ratio, with its interval as a vertical line, in the
    experiment's band, coloured by its word; the legend counts each word."""
    import matplotlib

    from pagelab.core import plots

    rng = np.random.default_rng(7)
    write_run(tmp_path / "A", rng)
    write_run(tmp_path / "B", rng, scale_time=2.0, scale_rate=2.0, shift_count=500)
    rows = compare.compare(tmp_path / "A", tmp_path / "B")
    frame = compare.to_frame(rows)
    fig = plots.ratios_by_experiment(frame, 0.05)
    ax = fig.axes[0]
    dots = [c for c in ax.collections if isinstance(c, matplotlib.collections.PathCollection)]
    ys = sorted(float(y) for c in dots for y in c.get_offsets()[:, 1])
    assert ys == pytest.approx(sorted(frame["ratio"]))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["toy"]
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    words = frame["word"].value_counts()
    assert {f"{w} ({n})" for w, n in words.items()} <= legend
    slower = [c for c in dots if c.get_label() == "slower"]
    assert slower and all(y == pytest.approx(2.0, rel=0.05) for y in slower[0].get_offsets()[:, 1])
    compare.write_figure(rows, tmp_path / "f.pdf")
    assert (tmp_path / "f.pdf").read_bytes().startswith(b"%PDF") and (tmp_path / "f.png").stat().st_size > 0


def test_an_experiment_of_this_checkout_is_grouped_by_its_descriptors_configurations(tmp_path):
    """pagein's trials are grouped by the keys of its descriptor's configurations (a number
    among them: the page cluster), read from the run's own config.json; a config.json without a
    key the configurations read is refused, naming the file."""
    from conftest import REFERENCE_RECORDING
    from pagelab.data.recording import recorded_dir
    from pagelab.experiments import harness

    block = harness.read_json(recorded_dir() / REFERENCE_RECORDING / "pagein", "config.json")  # today's names
    confs = harness.descriptor("pagein").configurations(block)
    assert any(not isinstance(v, str) for c in confs for v in c.values())
    rng = np.random.default_rng(5)
    for side in ("A", "B"):
        rows = [{"trial_id": f"t{i}", "order": i, "warmup": False, "status": "ok", "valid": True,
                 "invalid_reason": "", **c, "pagein_mbps": rng.normal(1, 0.01)}
                for i, c in enumerate(confs * 4)]
        (tmp_path / side / "pagein").mkdir(parents=True)
        pd.DataFrame(rows).to_csv(tmp_path / side / "pagein" / "trials.csv", index=False)
        (tmp_path / side / "pagein" / "config.json").write_text(json.dumps(block))
    got = {r.configuration for r in compare.compare(tmp_path / "A", tmp_path / "B")}
    assert got == {", ".join(f"{k}={v}" for k, v in c.items()) for c in confs}
    (tmp_path / "B" / "pagein" / "config.json").write_text("{}")
    with pytest.raises(ValueError, match=r"B/pagein/config.json: no key"):
        compare.compare(tmp_path / "A", tmp_path / "B")


def test_the_largest_changes_table_fits_the_text_width_whatever_the_names(tmp_path):
    """The paper's comparison section, its changes table full of long configuration and metric
    names (206 pt too wide unshrunk), built with the paper's own packages: no line of it runs
    into the margin."""
    import shutil
    import subprocess

    from conftest import REPO, widest_overfull

    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex missing: run `make setup`")
    config = "hog_rounds=10 ram=24M stick=usbstick-enhanced-2008"
    rows = [compare.Row("readyboost", f"arm=tier_between_with_agent_{i} {config}",
                        "restore_window_s.recovery_criterion_seed", 5, 12.3, 11.2, 13.4, 5, 20.1, 19.2, 21.3,
                        1.63, 1.5, 1.7, 0.001, 0.002, "slower") for i in range(10)]
    (tmp_path / "compare").mkdir()
    (tmp_path / "compare/section.tex").write_text(compare.section(rows, "epyc-2c-linux6.18-virtio/quick", "here"))
    compare.write_figure(rows, tmp_path / "compare/compare.pdf")
    packages = [ln for ln in (REPO / "paper/main.tex").read_text().splitlines()
                if ln.startswith(("\\documentclass", "\\usepackage"))]
    (tmp_path / "doc.tex").write_text("\n".join(packages) + "\n\\begin{document}\n\\input{compare/section.tex}\n"
                                      "\\end{document}\n")
    out = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-3000:]
    log = (tmp_path / "doc.log").read_text(errors="replace")
    assert widest_overfull(log) <= 10, log[-3000:]
