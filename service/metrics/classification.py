"""Accuracy, macro-F1 and confusion matrices over aligned labels, with invalid predictions counted wrong."""

from __future__ import annotations

from collections.abc import Sequence

from sklearn.metrics import accuracy_score, confusion_matrix, f1_score

# Stand-in label for a missing, invalid or duplicate prediction: never equal to a gold label, and never one of the
# averaged labels, so it lowers the recall of the true class without adding a class to the macro average.
NO_VALID_PREDICTION = "<no valid prediction>"


def _filled(y_pred: Sequence[str | None]) -> list[str]:
    return [NO_VALID_PREDICTION if label is None else label for label in y_pred]


def averaged_labels(y_true: Sequence[str], y_pred: Sequence[str | None], label_order: Sequence[str]) -> list[str]:
    """Labels seen in the gold or in a valid prediction, in the benchmark's order (sklearn's default set)."""
    seen = set(y_true) | {label for label in y_pred if label is not None}
    return [label for label in label_order if label in seen]


def accuracy_and_macro_f1(y_true: Sequence[str], y_pred: Sequence[str | None], *,
                          label_order: Sequence[str]) -> tuple[float, float]:
    """Accuracy and macro-F1 over all gold items; None predictions count wrong."""
    filled = _filled(y_pred)
    labels = averaged_labels(y_true, y_pred, label_order)
    accuracy = float(accuracy_score(y_true, filled))
    macro_f1 = float(f1_score(y_true, filled, labels=labels, average="macro", zero_division=0))
    return accuracy, macro_f1


def positive_f1(y_true: Sequence[str], y_pred: Sequence[str | None], *, positive: str) -> float:
    """F1 of one class taken as positive; None predictions count as not positive."""
    return float(f1_score(y_true, _filled(y_pred), labels=[positive], average="macro", zero_division=0))


def confusion(y_true: Sequence[str], y_pred: Sequence[str | None], *, label_order: Sequence[str]) -> dict:
    """Confusion matrix (rows gold, columns predicted) with a last column for items without a valid prediction."""
    labels = averaged_labels(y_true, y_pred, label_order)
    columns = [*labels, NO_VALID_PREDICTION]
    matrix = confusion_matrix(y_true, _filled(y_pred), labels=columns)[: len(labels)]
    return {"rows_gold": labels, "columns_predicted": columns, "matrix": matrix.tolist()}
