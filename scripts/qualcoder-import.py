"""
Imports a .qdpx into a fresh QualCoder project with QualCoder's own REFI-QDA importer, headless,
and compares what QualCoder stored with the run's tables. Run by scripts/check-in-qualcoder.ts:

    QT_QPA_PLATFORM=offscreen python3 scripts/qualcoder-import.py QUALCODER_SRC QDPX TABLES STUDY_ID

QUALCODER_SRC is a checkout's src/ folder (ccbogel/QualCoder); nothing of it is copied here.
The fresh project is made as QualCoder's "new project" makes it: its folders, and its database
from the CREATE TABLE statements of MainWindow.new_project, read out of QualCoder's source with
Python's ast. QualCoder's dialogs are answered from here: the file dialog gives the .qdpx, and
message boxes are recorded and closed. Prints one JSON object; exit 1 when anything differs.
"""
import ast
import builtins
import csv
import json
import os
import sqlite3
import sys
import tempfile
from pathlib import Path

qualcoder_src, qdpx, tables, study_id = sys.argv[1:5]
sys.path.insert(0, qualcoder_src)
builtins._ = lambda text: text  # QualCoder's gettext hook, installed by its main module
try:
    import fitz  # Debian's python3-fitz is PyMuPDF under its older module name

    sys.modules.setdefault("pymupdf", fitz)
except ImportError:
    pass

from PyQt6 import QtWidgets  # noqa: E402

qt_app = QtWidgets.QApplication([])
from qualcoder import helpers, refi  # noqa: E402

messages = []


def answer_message(self, *args):
    messages.append(self.text() if hasattr(self, "text") else "")
    return 0


helpers.Message.exec = answer_message
QtWidgets.QMessageBox.exec = answer_message
QtWidgets.QFileDialog.getOpenFileName = staticmethod(lambda *a, **k: (qdpx, "(*.qdpx *.QDPX)"))


def create_statements():
    """The CREATE TABLE statements of MainWindow.new_project in QualCoder's __main__.py."""
    tree = ast.parse(Path(qualcoder_src, "qualcoder", "__main__.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "new_project":
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "execute" and call.args:
                    arg = call.args[0]
                    if isinstance(arg, ast.Constant) and str(arg.value).startswith("CREATE TABLE"):
                        yield arg.value
            return
    raise SystemExit("no new_project in QualCoder's __main__.py")


class App:
    """What RefiImport uses of QualCoder's App: the project's database, folder and settings."""

    def __init__(self, project_path):
        self.project_path = project_path
        self.conn = sqlite3.connect(Path(project_path) / "data.qda")
        self.settings = {"directory": str(Path(project_path).parent), "codername": "default", "ai_enable": "False",
                         "fontsize": 10}
        self.ai_models = []

    def write_config_ini(self, settings, ai_models):
        pass


def rows(name):
    with open(f"{tables}/{name}.csv", encoding="utf-8", newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("study_id", study_id) == study_id]


def lf(text):
    return text.replace("\r\n", "\n").replace("\r", "\n")


def main():
    work = tempfile.mkdtemp(prefix="qualcoder-import-")
    project = Path(work, "imported.qda")
    for folder in ("", "images", "audio", "video", "documents"):
        (project / folder).mkdir(exist_ok=True)
    app = App(str(project))
    for statement in create_statements():
        app.conn.execute(statement)
    app.conn.commit()
    log = QtWidgets.QTextEdit()
    refi.RefiImport(app, log, "qdpx")
    db = app.conn

    problems = []
    sources = {name: (fid, text, path) for fid, name, text, path in
               db.execute("select id, name, fulltext, mediapath from source")}
    codes = {cid: name for cid, name in db.execute("select cid, name from code_name")}
    categories = [name for (name,) in db.execute("select name from code_cat")]
    cases = {name: caseid for caseid, name in db.execute("select caseid, name from cases")}
    case_attrs = {}
    for name, value, caseid in db.execute("select name, value, id from attribute where attr_type='case'"):
        case_attrs.setdefault(caseid, {})[name] = value
    file_attrs = {}
    for name, value, fid in db.execute("select name, value, id from attribute where attr_type='file'"):
        file_attrs.setdefault(fid, {})[name] = value
    source_by_id = {fid: (name, text) for name, (fid, text, _) in sources.items()}
    codings = {}
    for cid, fid, seltext, pos0, pos1 in db.execute(
            "select cid, fid, seltext, pos0, pos1 from code_text order by fid, pos0"):
        name, text = source_by_id[fid]
        if text[pos0:pos1] != seltext:
            problems.append(f"{name}: stored text of a coding differs from its positions")
        respondent = file_attrs.get(fid, {}).get("Respondent")
        codings.setdefault((respondent, codes.get(cid)), []).append(seltext)

    responses = rows("responses")
    answers = rows("answers")
    attributes = rows("attributes")
    questions = {(q["discussion_guide_question_id"], q["concept_id"]): q["position"] for q in rows("questions")}
    code_of_position = {n.split(" ", 1)[0][1:]: n for n in codes.values() if n.startswith("Q")}
    case_of_response = {}
    for r in responses:
        match = [c for c, attrs in ((cid, case_attrs.get(cid, {})) for cid in cases.values())
                 if attrs.get("Response id") == r["response_id"]]
        if len(match) != 1:
            problems.append(f"response {r['response_id']}: {len(match)} cases")
            continue
        case_of_response[r["response_id"]] = [n for n, c in cases.items() if c == match[0]][0]
    for r in responses:
        respondent = case_of_response.get(r["response_id"])
        got = codings.get((respondent, "Summary"), [])
        if got != ([lf(r["summary"])] if r["summary"] else []):
            problems.append(f"{respondent}: QualCoder's Summary coding is {got!r}")
    checked = 0
    for a in answers:
        respondent = case_of_response.get(a["response_id"])
        code = code_of_position.get(questions.get((a["discussion_guide_question_id"], a["concept_id"])))
        got = "\n".join(codings.get((respondent, code), []))
        checked += 1
        if got != lf(a["answer"]):
            problems.append(f"answer {a['answer_id']} ({respondent}, {code}): QualCoder has {got!r}")
    for at in attributes:
        respondent = case_of_response.get(at["response_id"])
        stored = case_attrs.get(cases.get(respondent), {})
        value = stored.get(at["key"], stored.get(f"{at['key']} (URL parameter)"))
        # QualCoder strips a value's surrounding white space (parse_variable_value, parse_cases keep it).
        if value != at["value"]:
            problems.append(f"{respondent}: attribute {at['key']}={value!r}, table has {at['value']!r}")
    media = [m for m in rows("media") if m["status"] == "archived"]
    audio = [n for n, (_, _, p) in sources.items() if p and p.startswith("/audio/")]
    video = [n for n, (_, _, p) in sources.items() if p and p.startswith("/video/")]
    for name in audio + video:
        folder = "audio" if name in audio else "video"
        if not (project / folder / name).is_file():
            problems.append(f"{name}: no file in the project's {folder}/")
        if f"{name}.txt" not in sources:
            problems.append(f"{name}: no transcript {name}.txt")
    result = {
        "sources": len(sources),
        "text_sources": len([1 for _, _, p in sources.values() if not p]),
        "audio": len(audio),
        "video": len(video),
        "media_rows": len(media),
        "codes": len(codes),
        "categories": categories,
        "codings": sum(len(v) for v in codings.values()),
        "answers_checked": checked,
        "cases": len(cases),
        "case_attributes": sum(len(v) for v in case_attrs.values()),
        "attributes_checked": len(attributes),
        "messages": messages,
        "problems": problems,
    }
    print(json.dumps(result, ensure_ascii=False))
    sys.exit(1 if problems else 0)


main()
