from __future__ import annotations

import ftfy
import pytest

from curator.base.errors import ConfigError
from curator.filters.fix_unicode import CJK
from curator.filters.language_id import DEFAULT_MODEL, LanguageId, predict_languages
from tests.filters.helpers_filters import run_pipeline, write_jsonl
from tests.helpers import run_cli

SAMPLES = {
    "en": "The committee will publish its final report on the river restoration next spring.",
    "fr": "Le comité publiera son rapport final sur la restauration de la rivière au printemps.",
    "de": "Der Ausschuss wird seinen Abschlussbericht über die Renaturierung im Frühjahr "
          "veröffentlichen.",
    "es": "El comité publicará su informe final sobre la restauración del río la próxima "
          "primavera.",
    "it": "Il comitato pubblicherà la sua relazione finale sul restauro del fiume la prossima "
          "primavera.",
    "ru": "Комитет опубликует свой окончательный доклад о восстановлении реки следующей весной.",
    "zh": "委员会将于明年春天发布关于河流修复的最终报告。",
    "ja": "委員会は来年の春に川の修復に関する最終報告書を発表する予定です。",
    "ar": "ستنشر اللجنة تقريرها النهائي حول إعادة تأهيل النهر في الربيع المقبل.",
    "ko": "위원회는 내년 봄에 하천 복원에 관한 최종 보고서를 발표할 예정입니다.",
}


def test_bundled_model_identifies_many_languages() -> None:
    langs, scores = predict_languages(list(SAMPLES.values()))
    assert langs == list(SAMPLES)
    assert all(s > 0.5 for s in scores)


def test_language_id_stage_keeps_chosen_languages(tmp) -> None:
    recs = [{"id": lang, "text": text + "\n" + text} for lang, text in SAMPLES.items()]
    recs.append({"id": "noise", "text": "xq zz 1234 ## qqq"})
    write_jsonl(tmp / "in.jsonl", recs)
    run = run_pipeline(tmp, [{"read_jsonl": {"paths": str(tmp / "in.jsonl")}},
                             {"language_id": {"languages": ["en", "zh", "ja"],
                                              "min_score": 0.65}}])
    out = {d.id: d for d in run.docs()}
    assert set(out) == {"en", "zh", "ja"}
    assert out["zh"].meta["language"] == "zh" and out["zh"].meta["language_score"] >= 0.65
    reasons = {r["id"]: r["rejected"]["reason"] for r in run.rejected("language_id")}
    assert reasons["fr"] == "language_id:other_language"
    assert reasons["ru"] == "language_id:other_language"
    counters = run.stage("language_id")["counters"]
    assert counters["language:ru"] == 1 and counters["language:en"] == 1
    assert sum(v for k, v in counters.items() if k.startswith("language:")) == len(recs)


def test_language_id_label_only_and_missing_model(tmp) -> None:
    stage = LanguageId.from_params({"label_only": True})
    assert stage.model_path == DEFAULT_MODEL
    with pytest.raises(ConfigError, match="not found"):
        LanguageId.from_params({"model_path": str(tmp / "nope.bin")})
    (tmp / "p.yaml").write_text(
        "name: t\nwork_dir: w\nstages:\n  - read_jsonl: {paths: x.jsonl}\n"
        f"  - language_id: {{model_path: {tmp / 'missing.ftz'}}}\n")
    p = run_cli("validate", "p.yaml", cwd=tmp, check=False)
    assert p.returncode != 0
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "missing.ftz" in err[0] and "not found" in err[0]


BROKEN = [
    "The Mona Lisa doesnâ€™t have eyebrows.",  # mojibake
    "Caf\u00c3\u00a9 au lait &amp; croissants",  # UTF-8 read as Latin-1 + HTML entity
    "bell\x07 and\x1b[31m red\x1b[0m text",  # control characters / terminal escapes
    "ﬁne ﬂour in ＦＵＬＬＷＩＤＴＨ",  # ligatures and full-width letters
    "line one\r\nline two",
]


def test_fix_unicode_matches_ftfy_and_skips_clean_ascii(tmp) -> None:
    clean = "Plain ASCII text stays exactly as it is.\nSecond line."
    recs = [{"id": str(i), "text": t} for i, t in enumerate(BROKEN)]
    recs.append({"id": "clean", "text": clean})
    write_jsonl(tmp / "in.jsonl", recs)
    run = run_pipeline(tmp, [{"read_jsonl": {"paths": str(tmp / "in.jsonl")}},
                             {"fix_unicode": {}}])
    out = {d.id: d.text for d in run.docs()}
    for i, t in enumerate(BROKEN):
        assert out[str(i)] == ftfy.fix_text(t, uncurl_quotes=False)
        assert out[str(i)] != t
    assert out["0"] == "The Mona Lisa doesn’t have eyebrows."
    assert "\x07" not in out["2"] and "\x1b" not in out["2"]
    assert out["clean"] == clean
    assert run.stage("fix_unicode")["counters"]["fix_unicode:changed"] == len(BROKEN)


def test_fix_unicode_options_are_exposed(tmp) -> None:
    write_jsonl(tmp / "in.jsonl", [{"id": "a", "text": BROKEN[0]}])
    run = run_pipeline(tmp, [{"read_jsonl": {"paths": str(tmp / "in.jsonl")}},
                             {"fix_unicode": {"fix_encoding": False}}])
    assert run.docs()[0].text == BROKEN[0]


def test_lone_surrogates_do_not_fail_a_batch() -> None:
    from curator.base.document import Document
    from curator.filters.decontaminate import Matcher
    from curator.filters.gopher_repetition import GopherRepetition

    bad = "broken \ud800 text " + SAMPLES["en"]
    langs, _ = predict_languages([bad, SAMPLES["fr"]])
    assert langs == ["en", "fr"]
    assert GopherRepetition.from_params({}).check(Document("x", bad * 3)) is not None
    assert Matcher({}).matches(bad) == []


# Real CJK text: gnupg-l10n's help.zh_CN.txt / help.ja.txt (GPL-3), a Japanese and a Korean
# sentence with the usual full-width punctuation and digits.
CJK_TEXTS = {
    "zh": "要建立起信任网络，GnuPG 需要知道哪些密钥是可绝对信任的――通常\n"
          "当您为某把密钥上某个用户标识添加签名时，您必须首先验证这把密钥确实属于\n"
          "DSA (也叫 DSS)即“数字签名算法”(美国国家标准)，只能够用作签名。\n"
          "注意：（仅供参考）第１版！",
    "ja": "バーが赤い色となっている場合、GnuPGはパスフレーズが弱すぎると判断し、受\n"
          "け付けません。東京（とうきょう）は日本の首都です！　人口は約１４００万人？",
    "ko": "서울（首尔）은 대한민국의 수도입니다： 인구는 약 ９４０만 명！",
}


def test_fix_unicode_keeps_full_width_punctuation_in_cjk_text(tmp) -> None:
    import ftfy.bad_codecs

    recs = [{"id": k, "text": v} for k, v in CJK_TEXTS.items()]
    recs += [{"id": "zh-mojibake", "text": CJK_TEXTS["zh"].encode().decode("sloppy-windows-1252")},
             {"id": "latin", "text": "ﬁne ﬂour in ＦＵＬＬＷＩＤＴＨ letters"}]
    assert not CJK.search(recs[-2]["text"])
    write_jsonl(tmp / "in.jsonl", recs)
    run = run_pipeline(tmp, [{"read_jsonl": {"paths": str(tmp / "in.jsonl")}},
                             {"fix_unicode": {}}])
    out = {d.id: d.text for d in run.docs()}
    for k, v in CJK_TEXTS.items():
        assert out[k] == v, k                               # nothing narrowed to ASCII
    assert "：" in out["zh"] and "（" in out["ja"] and "！" in out["ko"] and "　" in out["ja"]
    assert out["zh-mojibake"] == CJK_TEXTS["zh"]  # repaired, then recognised as Chinese
    assert out["latin"] == "fine flour in FULLWIDTH letters"  # Latin text is still narrowed
    assert out["latin"] == ftfy.fix_text(recs[-1]["text"])
    assert run.stage("fix_unicode")["counters"]["fix_unicode:cjk_width_kept"] == 4


def test_fix_unicode_width_folding_on_cjk_is_an_explicit_option(tmp) -> None:
    write_jsonl(tmp / "in.jsonl", [{"id": "zh", "text": CJK_TEXTS["zh"]}])
    run = run_pipeline(tmp, [{"read_jsonl": {"paths": str(tmp / "in.jsonl")}},
                             {"fix_unicode": {"fix_character_width": True}}])
    text = run.docs()[0].text
    assert text == ftfy.fix_text(CJK_TEXTS["zh"], uncurl_quotes=False)
    assert "注意:(仅供参考)第1版!" in text


def test_fix_unicode_nfkc_needs_the_width_choice_spelled_out(tmp) -> None:
    (tmp / "p.yaml").write_text(
        "name: t\nwork_dir: w\nstages:\n  - read_jsonl: {paths: x.jsonl}\n"
        "  - fix_unicode: {normalization: NFKC}\n")
    p = run_cli("validate", "p.yaml", cwd=tmp, check=False)
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1
    assert "p.yaml:5" in err[0] and "fix_character_width: true" in err[0]
