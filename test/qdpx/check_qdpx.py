"""
An independent check of a .qdpx written by `study-export qdpx`, against the run's CSV tables:
Python's zipfile and ElementTree, none of the project's code.

    python3 check_qdpx.py PROJECT.qdpx TABLES_DIR STUDY_ID

TABLES_DIR holds the run's CSV tables, written without formula escaping (output.csv).

Prints one JSON object: counts, the sorted GUIDs, and `problems` (empty when all is well).
What it checks:
- the zip is intact (every CRC), holds project.qde and sources/ only;
- every GUID is unique and every reference (targetGUID) names one;
- every internal:// path is a file in sources/; text sources are UTF-8 without BOM or CR;
- every coded passage, cut out of its source text by code points (text[start:end]), belongs to
  an answer: the passages of one answer, in order and joined by line ends, are the answer in
  answers.csv (its line ends as LF), for every answer of the study; summaries likewise;
- every response is a case whose variables carry its id and every attribute of attributes.csv;
- every recording archived for the study is a source; its bytes match media.csv's sha256 (or,
  for HLS, the joined segments' sizes); its transcript is the turn's reply.
"""
import csv
import hashlib
import json
import sys
import zipfile
import xml.etree.ElementTree as ET

NS = "{urn:QDA-XML:project:1.0}"


def rows(tables, name, study_id):
    with open(f"{tables}/{name}.csv", encoding="utf-8", newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("study_id", study_id) == study_id]


def lf(text):
    return text.replace("\r\n", "\n").replace("\r", "\n")


def main(qdpx, tables, study_id):
    problems = []
    z = zipfile.ZipFile(qdpx)
    bad = z.testzip()
    if bad is not None:
        problems.append(f"zip entry {bad} fails its CRC")
    names = set(z.namelist())
    if "project.qde" not in names:
        problems.append("no project.qde")
    for name in names:
        if name != "project.qde" and not name.startswith("sources/"):
            problems.append(f"unexpected entry {name}")
    root = ET.fromstring(z.read("project.qde"))
    if root.get("origin") in (None, ""):
        problems.append("Project has no origin")

    guids = {}
    for el in root.iter():
        g = el.get("guid")
        if g is not None:
            if g in guids:
                problems.append(f"GUID {g} used twice")
            guids[g] = el
    for el in root.iter():
        t = el.get("targetGUID")
        if t is not None and t not in guids:
            problems.append(f"{el.tag} refers to missing GUID {t}")

    def internal(path):
        if not path or not path.startswith("internal://"):
            return None
        entry = "sources/" + path[len("internal://"):]
        if entry not in names:
            problems.append(f"{path} is not in sources/")
            return None
        return entry

    def read_text(path):
        entry = internal(path)
        if entry is None:
            return ""
        raw = z.read(entry)
        if raw.startswith(b"\xef\xbb\xbf"):
            problems.append(f"{entry} starts with a BOM")
        if b"\r" in raw:
            problems.append(f"{entry} holds a carriage return")
        return raw.decode("utf-8")

    codes = {c.get("guid"): c.get("name") for c in root.iter(NS + "Code")}
    variables = {v.get("guid"): v.get("name") for v in root.iter(NS + "Variable")}

    def values_of(el):
        out = {}
        for vv in el.findall(NS + "VariableValue"):
            ref = vv.find(NS + "VariableRef").get("targetGUID")
            value = [c for c in vv if c.tag != NS + "VariableRef"]
            out[variables.get(ref)] = (value[0].text or "") if value else None
        return out

    # Cases: response id -> case element and variables.
    cases = {}
    for case in root.iter(NS + "Case"):
        values = values_of(case)
        cases[values.get("Response id")] = (case, values)

    # Sources: coded passages by (case name, code name), in document order.
    passages = {}
    source_names = []
    transcripts = {}
    for source in root.find(NS + "Sources") if root.find(NS + "Sources") is not None else []:
        source_names.append(source.get("name"))
        if source.get("name") in (None, "") or source.get("creationDateTime") is None:
            problems.append(f"source {source.get('guid')} lacks a name or creationDateTime")
        respondent = values_of(source).get("Respondent")
        if source.tag == NS + "TextSource":
            if source.find(NS + "PlainTextContent") is not None:
                problems.append("a TextSource holds PlainTextContent")
            text = read_text(source.get("plainTextPath"))
            for sel in source.findall(NS + "PlainTextSelection"):
                cut = text[int(sel.get("startPosition")):int(sel.get("endPosition"))]
                for coding in sel.findall(NS + "Coding"):
                    code = codes[coding.find(NS + "CodeRef").get("targetGUID")]
                    passages.setdefault((respondent, code), []).append(cut)
        else:
            path = source.get("path") or ""
            entry = internal(path) if path.startswith("internal://") else None
            transcript = source.find(NS + "Transcript")
            if transcript is None or transcript.get("name") is None:
                problems.append(f"recording {source.get('name')} has no named transcript")
                continue
            source_names.append(transcript.get("name"))
            transcripts[source.get("guid")] = {
                "respondent": respondent,
                "name": source.get("name"),
                "entry": entry,
                "path": path,
                "text": read_text(transcript.get("plainTextPath")),
            }
    lowered = [n.lower() for n in source_names]
    if len(set(lowered)) != len(lowered):
        problems.append("source names are not unique")
    code_names = [c.lower() for c in codes.values()]
    if len(set(code_names)) != len(code_names):
        problems.append("code names are not unique")

    # The tables.
    responses = rows(tables, "responses", study_id)
    questions = {(q["discussion_guide_question_id"], q["concept_id"]): q for q in rows(tables, "questions", study_id)}
    code_by_position = {}
    for name in codes.values():
        if name.startswith("Q") and " " in name:
            code_by_position[name.split(" ", 1)[0][1:]] = name
    answers = rows(tables, "answers", study_id)
    attributes = rows(tables, "attributes", study_id)
    transcript_rows = {(t["response_id"], t["turn"]): t for t in rows(tables, "transcript", study_id)}
    media = [m for m in rows(tables, "media", study_id) if m["status"] == "archived"]

    checked_answers = 0
    used = set()
    case_name = {}
    for r in responses:
        found = cases.get(r["response_id"])
        if found is None:
            problems.append(f"response {r['response_id']} has no case")
            continue
        case_name[r["response_id"]] = found[0].get("name")
        summary = lf(r["summary"])
        got = passages.get((found[0].get("name"), "Summary"), [])
        used.add((found[0].get("name"), "Summary"))
        if (summary and got != [summary]) or (not summary and got):
            problems.append(f"response {r['response_id']}: summary passage {got!r} != {summary!r}")
    for a in answers:
        q = questions.get((a["discussion_guide_question_id"], a["concept_id"]))
        code = code_by_position.get(q["position"]) if q else None
        name = case_name.get(a["response_id"])
        key = (name, code)
        used.add(key)
        got = passages.get(key, [])
        want = lf(a["answer"])
        checked_answers += 1
        if "\n".join(got) != want:
            problems.append(f"answer {a['answer_id']} ({code}): passages {got!r} != {want!r}")
    for key in passages:
        if key not in used:
            problems.append(f"passages coded {key} belong to no answer")

    checked_attributes = 0
    for at in attributes:
        values = cases.get(at["response_id"], (None, {}))[1]
        key = at["key"]
        value = values.get(key, values.get(f"{key} (URL parameter)"))
        checked_attributes += 1
        if value != at["value"]:
            problems.append(f"case of {at['response_id']}: {key}={value!r}, attributes.csv has {at['value']!r}")

    by_respondent_turn = {}
    for t in transcripts.values():
        by_respondent_turn.setdefault(t["respondent"], []).append(t)
    checked_media = 0
    for m in media:
        if m["kind"] == "hls" and any(x["kind"] == "video" and x["response_id"] == m["response_id"]
                                      and x["turn"] == m["turn"] for x in media):
            continue  # the MP4 of the same turn is the source
        name = case_name.get(m["response_id"])
        kind = "audio" if m["kind"] == "audio" else "video"
        wanted = f"{name} turn {m['turn']} {kind}"
        match = [t for t in by_respondent_turn.get(name, []) if t["name"].startswith(wanted + ".")]
        if len(match) != 1:
            problems.append(f"recording {m['file']}: {len(match)} sources named {wanted}.*")
            continue
        t = match[0]
        checked_media += 1
        reply = lf(transcript_rows[(m["response_id"], m["turn"])]["user"])
        if t["text"] != reply:
            problems.append(f"{t['name']}: transcript {t['text']!r} != {reply!r}")
        if t["entry"] is None:
            continue
        data = z.read(t["entry"])
        if m["kind"] != "hls" and hashlib.sha256(data).hexdigest() != m["sha256"]:
            problems.append(f"{t['name']}: sha256 differs from media.csv")
        if m["kind"] == "hls" and not data.startswith(b"\x47"):
            problems.append(f"{t['name']}: not MPEG-TS")

    print(json.dumps({
        "cases": len(cases),
        "codes": len(codes),
        "sources": len(source_names),
        "passages": sum(len(v) for v in passages.values()),
        "answers": checked_answers,
        "attributes": checked_attributes,
        "recordings": checked_media,
        "external": sorted(t["path"] for t in transcripts.values() if t["entry"] is None),
        "guids": sorted(guids),
        "problems": [p if len(p) < 400 else p[:400] + "…" for p in problems],
    }, ensure_ascii=False))


if __name__ == "__main__":
    main(*sys.argv[1:4])
