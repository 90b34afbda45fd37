#!/usr/bin/env python3
"""multilingual.py - search by meaning across languages: a dozen one-line daily notes in
Chinese, Japanese and English, twelve questions that share few or no words with the note
that answers them (most in another language), hit@1 and hit@3 of `mnemo search`.

    python3 bench/multilingual.py [--mnemo BIN] [--min-score X] [mnemo global args...]
    python3 bench/multilingual.py --set provider=none                       # keyword only
    python3 bench/multilingual.py --set provider=local --set model=me5 --min-score 0

Work files go to a fresh temporary directory. Standard library only.
"""
import json
import os
import subprocess
import sys
import tempfile

NOTES = {
    "2026-01-05": "# 周一\n- 用户喜欢深色模式，所有编辑器都用暗色主题。",
    "2026-01-06": "# 周二\n- 数据库迁移计划：下周把 PostgreSQL 从 13 升级到 16。",
    "2026-01-07": "# 周三\n- 她的女儿下个月有钢琴演奏会，要提前请假。",
    "2026-01-08": "# 周四\n- 生产环境的接口偶尔超时，怀疑是连接池太小。",
    "2026-01-09": "# 金曜日\n- 来月、京都へ家族旅行に行く予定。ホテルはまだ予約していない。",
    "2026-01-10": "# 土曜日\n- 毎朝ジョギングをしている。膝が少し痛い。",
    "2026-01-11": "# 日曜日\n- 上司との面談で、昇給の話をした。",
    "2026-01-12": "# Monday\n- The cat needs her vaccination at the vet on Thursday.",
    "2026-01-13": "# Tuesday\n- Ordered a new mechanical keyboard with brown switches.",
    "2026-01-14": "# 周三\n- 我对花生过敏，点外卖时要注意。",
    "2026-01-15": "# 木曜日\n- 新しいプロジェクトのリーダーに選ばれた。",
    "2026-01-16": "# 周五\n- 周末打算去爬山，天气预报说会下雨。",
}
QUERIES = [
    ("what theme does the user like in editors", "2026-01-05"),
    ("数据库升级", "2026-01-06"),
    ("孩子的音乐表演", "2026-01-07"),
    ("API timeouts in production", "2026-01-08"),
    ("旅行の計画", "2026-01-09"),
    ("running every morning, knee pain", "2026-01-10"),
    ("給料について話した", "2026-01-11"),
    ("宠物打疫苗", "2026-01-12"),
    ("キーボードを買った", "2026-01-13"),
    ("food allergy", "2026-01-14"),
    ("promoted to lead a project", "2026-01-15"),
    ("weekend hiking plans", "2026-01-16"),
]


def main():
    args = sys.argv[1:]
    mnemo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "mnemo")
    min_score = []
    if "--mnemo" in args:
        i = args.index("--mnemo")
        mnemo = args[i + 1]
        del args[i:i + 2]
    if "--min-score" in args:
        i = args.index("--min-score")
        min_score = args[i:i + 2]
        del args[i:i + 2]
    with tempfile.TemporaryDirectory() as tmp:
        ws = os.path.join(tmp, "ws")
        os.makedirs(os.path.join(ws, "memory"))
        for day, text in NOTES.items():
            with open(os.path.join(ws, "memory", day + ".md"), "w", encoding="utf-8") as f:
                f.write(text + "\n")
        base = [mnemo, "-w", ws, "--db", os.path.join(tmp, "index.sqlite")] + args
        subprocess.run(base + ["index", "-q"], check=True)
        h1 = h3 = 0
        for q, want in QUERIES:
            out = subprocess.run(base + ["search", "--json", "--max-results", "3"] + min_score +
                                 [q], capture_output=True, text=True, check=True)
            days = [r["path"][len("memory/"):-3] for r in json.loads(out.stdout)["results"]]
            h1 += bool(days) and days[0] == want
            h3 += want in days
            print("%-42s %-5s %s" % (q, "top1" if days and days[0] == want
                                     else "top3" if want in days else "miss", " ".join(days)))
        print("hit@1 %d/%d  hit@3 %d/%d" % (h1, len(QUERIES), h3, len(QUERIES)))


if __name__ == "__main__":
    main()
