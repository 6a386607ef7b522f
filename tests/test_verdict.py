"""Claims and verdicts: the kinds, the interval, each verdict rule (direction only, out of
reach, Holm), the trials a spread needs, bad input, the seeds' own words."""
import math

import pytest

from testbed import PROJECT_ROOT
from testbed.model.errors import ConfigError
from testbed.model.schema import Reader
from testbed.results import intervals, verdict as v


def rec(name, value, trial=1, **params):
    return {"name": name, "value": value, "params": dict(params, trial=trial)}


def claim(expect="> 1", ratio=True, **extra):
    value = ({"ratio": [{"metric": "e1.efficiency_lost", "params": {"rtt_ms": 80}},
                        {"metric": "e1.efficiency_lost", "params": {"rtt_ms": 0}}]}
             if ratio else {"metric": "e1.achieved_over_expected"})
    item = dict({"id": "c1", "kind": "claim", "words": "loss grows with latency", "where": "seed 000, Figure 2",
                 "value": value, "expect": expect}, **extra)
    return v.load_claims(Reader({"claims": [item]}, "results/paper/e1.yaml"), "e1")[0]


def losses(pairs):
    """[(loss at 0 ms, loss at 80 ms)] per trial -> records (rtt 80 recorded as 80.0)."""
    out = []
    for t, (at0, at80) in enumerate(pairs, 1):
        out += [rec("e1.efficiency_lost", at0, t, rtt_ms=0), rec("e1.efficiency_lost", at80, t, rtt_ms=80.0)]
    return out


def test_the_expression_is_evaluated_per_trial_and_numbers_match_as_numbers():
    c = claim()
    assert c.value.per_trial(losses([(0.25, 0.5), (0.4, 0.6)])) == pytest.approx([2.0, 1.5])
    assert c.value.text() == "e1.efficiency_lost{rtt_ms=80} / e1.efficiency_lost{rtt_ms=0}"


def test_reproduced_when_the_interval_is_on_the_papers_side():
    got = v.evaluate(claim(), losses([(0.257, 0.474), (0.369, 0.535), (0.265, 0.772)]))
    # ratios 1.844, 1.450, 2.913: mean 2.07, t(2)=4.303 * sd 0.757 / sqrt 3 = 1.88 -> [0.19, 3.95]
    assert got.verdict == v.INCONCLUSIVE and got.lo < 1 < got.hi and got.more_trials > 3
    tight = v.evaluate(claim(), losses([(0.3, 0.6), (0.3, 0.63), (0.3, 0.57)]))
    assert tight.verdict == v.REPRODUCED and tight.lo > 1 and tight.passes and tight.judged
    assert tight.mean == pytest.approx(2.0) and "2 [" in tight.estimate() and "(2, 2.1, 1.9)" in tight.estimate()


def test_contradicted_when_the_interval_is_on_the_other_side_and_the_row_fails():
    got = v.evaluate(claim(), losses([(0.6, 0.3), (0.6, 0.33), (0.6, 0.27)]))
    assert got.verdict == v.CONTRADICTED and got.hi < 1 and not got.passes
    assert "contradicted" in got.line() and "3 trials" in got.line()


def test_one_trial_is_inconclusive_says_which_side_it_leans_and_is_not_judged():
    got = v.evaluate(claim(), losses([(0.6, 0.3)]))
    assert got.verdict == v.INCONCLUSIVE and "against the paper" in got.line()
    assert not got.judged   # the suite row SKIPs: a row that cannot fail never passes
    assert v.evaluate(claim(), []).verdict == v.NO_DATA


def test_on_the_side_but_outside_the_papers_band_is_direction_only():
    sized = claim(paper=38.4, band="x2")
    got = v.evaluate(sized, losses([(0.3, 0.39), (0.3, 0.42), (0.3, 0.36)]))   # 1.3, 1.4, 1.2
    assert got.verdict == v.DIRECTION_ONLY and got.passes and got.judged
    assert "outside the band [19.2, 76.8]" in got.why and "mean / paper = 0.0339" in got.why
    near = v.evaluate(sized, losses([(0.01, 0.3), (0.01, 0.4), (0.01, 0.35)]))   # 30, 40, 35
    assert near.verdict == v.REPRODUCED


def test_a_claim_whose_bottleneck_does_not_bind_here_is_out_of_reach():
    reach = {"value": {"metric": "e5.collector_duty_cycle"}, "expect": "> 0.5",
             "resource": "the collector's CPU; the workers' RAM binds here", "plan": "testbed plan --for e5:full"}
    c = claim(reach=reach)
    records = losses([(0.3, 0.6), (0.3, 0.63), (0.3, 0.57)])
    idle = records + [rec("e5.collector_duty_cycle", x, t) for t, x in enumerate([0.04, 0.9, 0.06], 1)]
    got = v.evaluate(c, idle)
    assert got.verdict == v.OUT_OF_REACH and not got.judged
    assert got.why.startswith("the collector's CPU; the workers' RAM binds here (measured ")
    assert "trial 1: 0.04, trial 3: 0.06" in got.why and "testbed plan --for e5:full" in got.why
    busy = records + [rec("e5.collector_duty_cycle", 0.9, t) for t in (1, 2, 3)]
    assert v.evaluate(c, busy).verdict == v.REPRODUCED
    assert v.evaluate(c, records).verdict == v.INCONCLUSIVE   # the reach was not measured


def test_a_check_holds_or_fails_in_every_trial_without_an_interval():
    c = claim("= 0.2", kind="check", ratio=False)
    held = v.evaluate(c, [rec("e1.achieved_over_expected", 0.2, t) for t in (1, 2, 3)])
    assert held.verdict == v.HOLDS and held.lo is None and held.judged and held.passes
    assert held.estimate() == "0.2, 0.2, 0.2"
    one = v.evaluate(c, [rec("e1.achieved_over_expected", 0.2)])
    assert one.verdict == v.HOLDS and one.judged      # an equality can fail in one trial
    broke = v.evaluate(c, [rec("e1.achieved_over_expected", x, t) for t, x in enumerate([0.2, 0.25], 1)])
    assert broke.verdict == v.FAILS and not broke.passes and "trial 2 gave 0.25" in broke.why


def test_a_claim_whose_trials_do_not_vary_is_no_reproduction():
    got = v.evaluate(claim("< 1", ratio=False), [rec("e1.achieved_over_expected", 0.2, t) for t in (1, 2, 3)])
    assert got.verdict == v.INCONCLUSIVE and "a check, not a reproduction" in got.why and got.lo is None


def test_the_t_distribution_and_the_one_sided_p():
    assert intervals.t_cdf(4.303, 2) == pytest.approx(0.975, abs=1e-4)
    assert intervals.t_cdf(2.0, 5) == pytest.approx(0.94903, abs=1e-5)
    assert intervals.t_cdf(-1.0, 3) == pytest.approx(1 - intervals.t_cdf(1.0, 3))
    e = v.Expectation.parse("> 1", None)
    # mean 2, sd 0.1, n 3: t = 17.3 -> p tiny; mean 1.1, sd 0.5: p large
    assert e.p_value([1.9, 2.0, 2.1]) < 0.01 and e.p_value([0.6, 1.1, 1.6]) > 0.3


def test_holm_takes_back_a_claim_that_clears_alone_but_not_among_many():
    # trials whose interval just clears 1: alone reproduced, among 10 claims not
    edge = losses([(0.3, 0.3 * x) for x in (1.5, 1.9, 1.7)])
    alone = v.evaluate_all([claim()], edge)[0]
    assert alone.verdict == v.REPRODUCED and alone.p_holm == pytest.approx(alone.p)
    many = [claim(id=f"c{i}") for i in range(10)]
    judged = v.evaluate_all(many, edge)
    assert all(x.verdict == v.INCONCLUSIVE and x.raw == v.REPRODUCED for x in judged)
    assert "Holm's correction over 10 claims" in judged[0].why
    # findings and checks are not in the family
    mixed = v.evaluate_all([claim()] + [claim(id=f"f{i}", kind="finding") for i in range(9)], edge)
    assert mixed[0].verdict == v.REPRODUCED


def test_models_sit_under_their_claim_and_only_claims_are_tallied():
    loss = {"ratio": [{"metric": "e1.efficiency_lost", "params": {"rtt_ms": 80}},
                      {"metric": "e1.efficiency_lost", "params": {"rtt_ms": 0}}]}
    items = [{"id": "calls", "kind": "check", "value": {"metric": "e1.achieved_over_expected"}, "expect": "= 0.2"},
             {"id": "tail", "kind": "finding", "value": loss, "expect": "> 1"},
             {"id": "loss-scaled", "kind": "model", "model_of": "loss", "value": loss, "expect": "> 1"},
             {"id": "loss", "kind": "claim", "value": loss, "expect": "> 1"}]
    check, finding, model, base = v.load_claims(
        Reader({"claims": [dict(i, words="w", where="seed 000") for i in items]}, "p.yaml"), "e1")
    records = losses([(0.3, 0.6), (0.3, 0.63), (0.3, 0.57)]) + \
        [rec("e1.achieved_over_expected", 0.2, t) for t in (1, 2, 3)]
    judged = v.evaluate_all([check, finding, model, base], records)
    sections = [(title, [x.claim.id for x in rows]) for title, rows in v.ordered(judged)]
    assert sections == [("paper claims", ["loss", "loss-scaled"]), ("mechanism checks", ["calls"]),
                        ("findings of this testbed", ["tail"])]
    assert v.tally(judged) == "1 reproduced"
    _headers, rows = v.table(judged)
    assert rows[1][0] == "  loss-scaled" and rows[1][1] == "reproduced (model)"


def test_approximately_with_a_tolerance():
    c = claim("~ 1.44 +- 25%", ratio=False)
    assert c.expect.x == 1.44 and c.expect.tol == pytest.approx(0.36)
    near = [rec("e1.achieved_over_expected", x, t) for t, x in enumerate([1.3, 1.4, 1.35], 1)]
    far = [rec("e1.achieved_over_expected", x, t) for t, x in enumerate([0.8, 0.81, 0.79], 1)]
    assert v.evaluate(c, near).verdict == v.REPRODUCED
    assert v.evaluate(c, far).verdict == v.CONTRADICTED


def test_trials_needed_shrinks_with_the_spread():
    e = v.Expectation.parse("> 1", None)
    assert v.trials_needed([1.2, 1.5, 1.1], e) < v.trials_needed([0.9, 1.8, 1.2], e)
    assert v.trials_needed([1.0, 1.0], e) is None  # on the edge: no number of trials decides it


@pytest.mark.parametrize("bad, field", [
    ({"expect": ">> 1"}, "claims[0].expect"),
    ({"value": {"ratio": [{"metric": "a"}]}}, "claims[0].value.ratio"),
    ({"value": {"metrik": "a"}}, "claims[0].value"),
    ({"paper": "lots"}, "claims[0].paper"),
    ({"colour": "red"}, "claims[0].colour"),
    ({"kind": "hunch"}, "claims[0].kind"),
    ({"paper": 11.7}, "claims[0].band"),                       # a paper figure needs its declared band
    ({"paper": 11.7, "band": "x0.5"}, "claims[0].band"),
    ({"band": "x2"}, "claims[0].band"),                         # a band around nothing
    ({"expect": "= 1"}, "claims[0].expect"),                    # only a check is an equality
    ({"model_of": "c0"}, "claims[0].model_of"),
    ({"reach": {"value": {"metric": "a"}, "expect": "= 1", "resource": "r", "plan": "p"}}, "claims[0].reach.expect"),
    ({"reach": {"value": {"metric": "a"}, "expect": "> 1"}}, "claims[0].reach.resource"),
])
def test_bad_claims_are_one_line_errors_naming_the_field(bad, field):
    item = dict({"id": "c1", "kind": "claim", "words": "w", "where": "x", "value": {"metric": "a"},
                 "expect": "> 1"}, **bad)
    with pytest.raises(ConfigError) as err:
        v.load_claims(Reader({"claims": [item]}, "results/paper/e1.yaml"), "e1")
    assert field in str(err.value) and "\n" not in str(err.value)


def test_a_claim_declared_twice_is_refused():
    item = {"id": "c1", "kind": "claim", "words": "w", "where": "x", "value": {"metric": "a"}, "expect": "> 1"}
    with pytest.raises(ConfigError, match="declared twice"):
        v.load_claims(Reader({"claims": [item, item]}, "p.yaml"), "e1")


def test_every_declared_claim_names_metrics_its_experiment_records():
    from testbed.harness import registry
    for exp in registry.experiments().values():
        if not exp.paper:
            continue
        for c in v.load_file(exp.paper_path):
            for sel in c.value.selectors() + (c.reach.value.selectors() if c.reach else []):
                assert sel.metric in exp.metrics, f"{exp.paper}: {c.id} reads {sel.metric}, not a metric of {exp.name}"


def test_each_paper_experiment_declares_its_paper_claims():
    from testbed.harness import registry
    counts = {e.name: sum(c.kind == v.CLAIM for c in v.load_file(e.paper_path))
              for e in registry.experiments().values() if e.paper}
    assert counts and all(n >= 1 for n in counts.values()), counts


SEEDS = PROJECT_ROOT.parent / "shared" / "seeds"


def seed_text(seed):
    return " ".join((SEEDS / f"{seed}.txt").read_text().split())


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seeds are not on this machine (../shared/seeds/)")
def test_every_quoted_claim_is_the_seeds_own_words():
    from testbed.harness import registry
    for exp in registry.experiments().values():
        if not exp.paper:
            continue
        text = seed_text(exp.seed)
        for c in v.load_file(exp.paper_path):
            if c.kind not in v.QUOTED_KINDS:
                continue
            at = 0
            for fragment in (" ".join(f.split()) for f in c.words.split(" ... ")):
                found = text.find(fragment, at)
                assert found >= 0, f"{exp.paper}: {c.id}: {fragment!r} is not in seed {exp.seed} (after the " \
                                   f"fragments before it)"
                at = found + len(fragment)
            assert c.where.startswith(f"seed {exp.seed[:3]}"), f"{exp.paper}: {c.id}: where names another seed"


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seeds are not on this machine (../shared/seeds/)")
def test_every_paper_is_cited_as_its_seed_names_it():
    """The title verbatim and every author's surname in the seed; where it was published
    either as the seed prints it or said to be absent from it."""
    import re
    from testbed.harness import registry
    from testbed.results import compare
    for exp in registry.experiments().values():
        if not exp.paper:
            continue
        text, cite = seed_text(exp.seed), compare.load_citation(exp.paper_path)
        assert cite["title"] in text, f"{exp.paper}: citation.title is not in seed {exp.seed}"
        for author in re.sub(r"\(.*\)", "", cite["authors"]).split(", "):
            assert author.split()[-1] in text, f"{exp.paper}: author {author!r} is not in seed {exp.seed}"
        venue = re.sub(r" \(\d{4}\)$", "", cite["published"])
        assert venue in text.replace("*", "") or "not in the seed" in venue or venue.startswith("slides, "), exp.paper


def test_a_citation_without_a_title_is_refused_naming_the_field(tmp_path):
    from testbed.model.errors import ConfigError
    from testbed.results import compare
    path = tmp_path / "e9.yaml"
    path.write_text('citation: {authors: "A B", published: "x"}\nfigures: []\n')
    with pytest.raises(ConfigError, match=r"e9.yaml: citation.title: is required"):
        compare.load_citation(path)


def test_the_verdict_table_counts_and_lists_each_claim():
    import types
    run = types.SimpleNamespace(label="20261125T000000Z-e1-default")
    verdicts = v.evaluate_all([claim(), claim(id="c2")], losses([(0.3, 0.6), (0.3, 0.63), (0.3, 0.57)])) + \
        v.evaluate_all([claim(id="c3")], losses([(0.3, 0.6), (0.3, 0.2), (0.3, 0.5)]))
    text = v.render_text([(run, verdicts)])
    assert text.startswith("Does 20261125T000000Z-e1-default reproduce the paper? (paper claims: 1 inconclusive, "
                           "2 reproduced;")
    assert "Holm's step-down" in text and "c1     reproduced    3" in text and "trials would decide it" in text


def test_each_suite_has_one_claim_row_per_declared_claim_in_order():
    from robot.api import TestSuiteBuilder

    from testbed.harness import registry
    for exp in registry.experiments().values():
        if not exp.paper:
            continue
        suite = TestSuiteBuilder().build(str(exp.suite_path))
        rows = [(t.name, t.template, [str(a) for a in t.body[0].args]) for t in suite.tests if "claim" in t.tags]
        want = [(c.id, "Paper Claim Should Hold", [c.id]) for c in v.load_file(exp.paper_path)]
        assert rows == want, f"{exp.suite}: claim rows differ from {exp.paper}'s claims"
        assert all("claim" in t.tags for t in suite.tests[-len(want):]), f"{exp.suite}: claim rows must come last"


def test_a_suite_judges_a_claim_over_every_trial_once_the_last_trial_runs(tmp_path):
    from testbed.harness import session
    from testbed.results import runs as results
    run = results.Run.create("e1", ["default", "wan-tuned"], topology={"name": "t"}, profile_contents={},
                             accel="tcg", root=tmp_path)
    run.update(trials=3)
    site = session.Session.__new__(session.Session)
    for trial, (at0, at80) in enumerate([(0.3, 0.6), (0.3, 0.63), (0.3, 0.57)], 1):
        run.update(trial=trial)
        site.run = results.Run(run.path, trial=trial)
        site.run.record("e1.efficiency_lost", at0, "ratio", rtt_ms=0, rate="2W", profile="table4-default")
        site.run.record("e1.efficiency_lost", at80, "ratio", rtt_ms=80.0, rate="2W", profile="table4-default")
        found, why = site.claim_verdict("e1-loss-grows-with-rtt")
        if trial < 3:
            assert found is None and why == f"judged after the last trial (this is trial {trial} of 3)"
    assert found.verdict == v.REPRODUCED and len(found.values) == 3
    found, why = site.claim_verdict("e1-tuning-lowers-loss-at-80ms")   # table4-updated not measured
    assert found is None and why.startswith("e1-tuning-lowers-loss-at-80ms: no data")
    with pytest.raises(AssertionError, match="no claim 'e1-nothing'"):
        site.claim_verdict("e1-nothing")


def test_later_trials_take_their_sizes_from_the_first(tmp_path):
    from testbed.harness import session
    from testbed.results import runs as results
    run = results.Run.create("e1", ["table4-default"], topology={"name": "t"}, profile_contents={},
                             accel="tcg", root=tmp_path)
    site = session.Session.__new__(session.Session)
    site.run = results.Run(run.path)                       # a single run: nothing to follow
    assert site.first_trial_value("e1.sustained_rx_rate") is None
    site.run = results.Run(run.path, trial=1)
    site.run.record("e1.sustained_rx_rate", 2.4, "MB/s", profile="table4-default")
    assert site.first_trial_value("e1.sustained_rx_rate") is None  # trial 1 measures its own
    site.run = results.Run(run.path, trial=2)
    site.run.record("e1.sustained_rx_rate", 3.1, "MB/s", profile="table4-default")
    assert site.first_trial_value("e1.sustained_rx_rate") == 2.4


def slope_claim(expect="~ 1.38 +- 50%"):
    item = {"id": "mem", "kind": "finding", "words": "w", "where": "x", "expect": expect, "paper": 1.38,
            "value": {"slope": [{"metric": "free", "params": {"host": "submit"}}, {"metric": "running"}],
                      "over": "step", "times": -1}}
    return v.load_claims(Reader({"claims": [item]}, "p.yaml"), "e5")[0]


def test_a_slope_claim_pairs_records_by_step_within_each_trial():
    records = []
    for trial, per_job in ((1, 1.2), (2, 1.4), (3, 1.3)):
        for step in (16, 32, 64, 128):
            records += [{"name": "running", "value": step, "params": {"step": step, "trial": trial}},
                        # Robot may record the step as text: "16" pairs with 16
                        {"name": "free", "value": 900 - per_job * step,
                         "params": {"host": "submit", "step": str(step), "trial": trial}},
                        {"name": "free", "value": 10.0, "params": {"host": "dtn", "step": step, "trial": trial}}]
    c = slope_claim()
    assert [round(x, 6) for x in c.value.per_trial(records)] == [1.2, 1.4, 1.3]
    assert v.evaluate(c, records).verdict == v.REPRODUCED
    assert v.evaluate(slope_claim("~ 3 +- 10%"), records).verdict == v.CONTRADICTED
    assert c.value.text() == "-1 x slope of free{host=submit} over running by step"
    assert [s.metric for s in c.value.selectors()] == ["free", "running"]
    # one step has no slope: no data, not a zero
    assert v.evaluate(c, [r for r in records if r["params"]["step"] in (16, "16")]).verdict == v.NO_DATA


def test_a_slope_claim_must_name_its_pairing_parameter():
    item = {"id": "m", "kind": "finding", "words": "w", "where": "x", "expect": "> 0",
            "value": {"slope": [{"metric": "a"}, {"metric": "b"}]}}
    with pytest.raises(ConfigError, match="value.over: must name the parameter"):
        v.load_claims(Reader({"claims": [item]}, "p.yaml"), "e5")


def test_a_cvs_standard_error_shrinks_with_the_trials():
    # McKay: cv / sqrt(2 (n - 1)) x sqrt(1 + 2 cv^2); 0.1 from 5 trials -> 0.1 / sqrt(8) x sqrt(1.02)
    assert intervals.cv_standard_error(0.1, 5) == pytest.approx(0.1 / math.sqrt(8) * math.sqrt(1.02))
    assert intervals.cv_standard_error(0.1, 17) == pytest.approx(intervals.cv_standard_error(0.1, 5) / 2)   # 4x the (n - 1): half
    with pytest.raises(ValueError, match="two values or more"):
        intervals.cv_standard_error(0.1, 1)


def claim_row(found):
    """TestbedLibrary's `Paper Claim Should Hold` with a site whose run judged the claim as `found`."""
    from types import SimpleNamespace

    from robot.utils import Importer
    lib = Importer("test library").import_class_or_module_by_path(
        str(PROJECT_ROOT / "robot" / "libraries" / "TestbedLibrary.py"))
    me = SimpleNamespace(site=SimpleNamespace(claim_verdict=lambda cid: (found, None)))
    return lib.paper_claim_should_hold(me, found.claim.id)


def test_a_claim_row_skips_what_cannot_fail_and_fails_a_contradiction_or_a_failed_check():
    from robot.api.exceptions import SkipExecution
    with pytest.raises(SkipExecution, match="one trial has no interval; its value is against the paper"):
        claim_row(v.evaluate(claim(), losses([(0.6, 0.3)])))          # one trial: never a PASS
    reach = {"value": {"metric": "e1.tcp_rate"}, "expect": "> 1250", "resource": "the NIC", "plan": "KVM"}
    far = v.evaluate(claim(reach=reach), losses([(0.3, 0.6), (0.3, 0.63)]) +
                     [rec("e1.tcp_rate", 300.0, t) for t in (1, 2)])
    with pytest.raises(SkipExecution, match="out of reach"):
        claim_row(far)
    with pytest.raises(AssertionError, match="contradicted"):
        claim_row(v.evaluate(claim(), losses([(0.6, 0.3), (0.6, 0.33), (0.6, 0.27)])))
    with pytest.raises(AssertionError, match="fails"):
        claim_row(v.evaluate(claim("= 0.2", kind="check", ratio=False), [rec("e1.achieved_over_expected", 0.3)]))


def test_a_claim_row_that_skips_leaves_its_message_to_robot_once(capfd):
    from robot.api.exceptions import SkipExecution
    with pytest.raises(SkipExecution) as skipped:
        claim_row(v.evaluate(claim(), losses([(0.6, 0.3)])))
    out = capfd.readouterr()
    assert str(skipped.value) and str(skipped.value) not in out.out + out.err


def test_holm_over_verdicts_already_corrected_is_the_same_correction():
    edge = losses([(0.3, 0.3 * x) for x in (1.5, 1.9, 1.7)])
    once = v.evaluate_all([claim(id=f"c{i}") for i in range(4)], edge)
    twice = v.holm(once)
    assert [(x.verdict, x.p_holm) for x in twice] == [(x.verdict, x.p_holm) for x in once]
    assert [x.why.count("Holm") for x in twice] == [x.why.count("Holm") for x in once]


def test_bibtex_of_a_journal_paper_and_of_slides():
    from testbed.results import compare
    art = compare.bibtex("k1", {"title": "T: a study", "authors": "A B, C D", "url": "",
                                "published": "J. Phys.: Conf. Ser. 664 062014 (2015)"})
    assert art.splitlines()[0] == "@article{k1,"
    assert "  author = {A B and C D}," in art and "  journal = {J. Phys.: Conf. Ser.}," in art
    assert "  volume = {664}," in art and "  pages = {062014}," in art and art.endswith("  year = {2015}\n}")
    misc = compare.bibtex("k2", {"title": "S", "authors": "E F (for a group)", "url": "http://x",
                                 "published": "slides, a meeting, February 19, 2014"})
    assert misc.startswith("@misc{k2,\n  author = {E F},") and "  note = {slides, a meeting, February 19, 2014}," in misc
    assert "  year = {2014}," in misc and misc.endswith("  url = {http://x}\n}")
