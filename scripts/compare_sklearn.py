#!/usr/bin/env python3
"""Tabular accuracy: NN Studio's default MLP against scikit-learn's MLPClassifier on the same split.

For each sample CSV (header, string or numeric labels, label last or first) this writes a seeded,
stratified 80/20 train/test split to a scratch folder, then trains
  - scikit-learn: StandardScaler + MLPClassifier() with its defaults (100 ReLU units, Adam 1e-3, 200 epochs),
  - NN Studio:    npx nnstudio train --data train.csv --test-data test.csv --epochs 200 --normalize zscore
                  (every other option at its default),
for several seeds and prints one JSON line per dataset and seed plus a Markdown table.
Run from the repository root with Debian's python3 (python3-sklearn): /usr/bin/python3 scripts/compare_sklearn.py
"""
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATASETS = [
    ("iris", "resources/samples/iris.csv", -1),
    ("wine", "resources/samples/wine.csv", 0),
    ("breast_cancer", "resources/samples/breast_cancer.csv", -1),
]
SEEDS = [0, 1, 2]


def read_csv(path):
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


def write_csv(path, header, rows):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def label_index(header, label_column):
    return label_column if label_column >= 0 else len(header) + label_column


def ours(train_path, test_path, label_column, seed, folder):
    command = [
        "node", os.path.join(ROOT, "bin", "nnstudio.js"), "train", "--data", train_path, "--test-data", test_path,
        "--label-column", str(label_column), "--epochs", "200", "--normalize", "zscore", "--seed", str(seed),
        "--device", "cpu", "--json", "--out", os.path.join(folder, "model.safetensors"),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)["test"]["accuracy"]


def theirs(header, train_rows, test_rows, label_column, seed):
    column = label_index(header, label_column)
    split = lambda rows: ([[float(v) for i, v in enumerate(r) if i != column] for r in rows], [r[column] for r in rows])
    x_train, y_train = split(train_rows)
    x_test, y_test = split(test_rows)
    model = make_pipeline(StandardScaler(), MLPClassifier(random_state=seed))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at 200 iterations, as with the defaults
        model.fit(x_train, y_train)
    return model.score(x_test, y_test)


def main():
    table = []
    for name, path, label_column in DATASETS:
        header, rows = read_csv(os.path.join(ROOT, path))
        labels = [row[label_index(header, label_column)] for row in rows]
        scores = {"nnstudio": [], "sklearn": []}
        for seed in SEEDS:
            train_rows, test_rows = train_test_split(rows, test_size=0.2, stratify=labels, random_state=seed)
            with tempfile.TemporaryDirectory() as folder:
                train_path, test_path = os.path.join(folder, "train.csv"), os.path.join(folder, "test.csv")
                write_csv(train_path, header, train_rows)
                write_csv(test_path, header, test_rows)
                ours_accuracy = ours(train_path, test_path, label_column, seed, folder)
            sklearn_accuracy = theirs(header, train_rows, test_rows, label_column, seed)
            scores["nnstudio"].append(ours_accuracy)
            scores["sklearn"].append(sklearn_accuracy)
            print(json.dumps({"dataset": name, "seed": seed, "test": len(test_rows), "nnstudio": ours_accuracy, "sklearn": sklearn_accuracy}), flush=True)
        table.append((name, len(rows), label_column, statistics.mean(scores["nnstudio"]), statistics.mean(scores["sklearn"])))
    print("\n| dataset | rows | label column | NN Studio (mean of %d seeds) | scikit-learn MLPClassifier |" % len(SEEDS))
    print("| --- | --- | --- | --- | --- |")
    for name, count, label_column, ours_mean, sklearn_mean in table:
        where = "last" if label_column == -1 else "first"
        print(f"| {name} | {count} | {where} | {ours_mean * 100:.1f} % | {sklearn_mean * 100:.1f} % |")


if __name__ == "__main__":
    sys.exit(main())
