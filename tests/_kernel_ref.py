"""An independent re-implementation (a review's, 2026-11-27) of the copied code: the Kaggle
benchmark kernel's functions and the authors' model_bias_analysis.py, for tests/test_compat_reference.py."""
import numpy as np
import pandas as pd
import scipy.stats as stats
from sklearn import metrics

SUBGROUP_AUC = 'subgroup_auc'
BPSN_AUC = 'bpsn_auc'
BNSP_AUC = 'bnsp_auc'
TOXICITY_COLUMN = 'target'


def compute_auc(y_true, y_pred):
    try:
        return metrics.roc_auc_score(y_true, y_pred)
    except ValueError:
        return np.nan


def compute_subgroup_auc(df, subgroup, label, model_name):
    subgroup_examples = df[df[subgroup]]
    return compute_auc(subgroup_examples[label], subgroup_examples[model_name])


def compute_bpsn_auc(df, subgroup, label, model_name):
    subgroup_negative_examples = df[df[subgroup] & ~df[label]]
    non_subgroup_positive_examples = df[~df[subgroup] & df[label]]
    examples = pd.concat([subgroup_negative_examples, non_subgroup_positive_examples])
    return compute_auc(examples[label], examples[model_name])


def compute_bnsp_auc(df, subgroup, label, model_name):
    subgroup_positive_examples = df[df[subgroup] & df[label]]
    non_subgroup_negative_examples = df[~df[subgroup] & ~df[label]]
    examples = pd.concat([subgroup_positive_examples, non_subgroup_negative_examples])
    return compute_auc(examples[label], examples[model_name])


def compute_bias_metrics_for_model(dataset, subgroups, model, label_col, include_asegs=False):
    records = []
    for subgroup in subgroups:
        record = {'subgroup': subgroup, 'subgroup_size': len(dataset[dataset[subgroup]])}
        record[SUBGROUP_AUC] = compute_subgroup_auc(dataset, subgroup, label_col, model)
        record[BPSN_AUC] = compute_bpsn_auc(dataset, subgroup, label_col, model)
        record[BNSP_AUC] = compute_bnsp_auc(dataset, subgroup, label_col, model)
        records.append(record)
    return pd.DataFrame(records).sort_values('subgroup_auc', ascending=True)


def calculate_overall_auc(df, model_name):
    true_labels = df[TOXICITY_COLUMN]
    predicted_labels = df[model_name]
    return metrics.roc_auc_score(true_labels, predicted_labels)


def power_mean(series, p):
    total = sum(np.power(series, p))
    return (total / len(series)) ** (1 / p)


def get_final_metric(bias_df, overall_auc, POWER=-5, OVERALL_MODEL_WEIGHT=0.25):
    bias_score = np.average([
        power_mean(bias_df[SUBGROUP_AUC], POWER),
        power_mean(bias_df[BPSN_AUC], POWER),
        power_mean(bias_df[BNSP_AUC], POWER)
    ])
    return (OVERALL_MODEL_WEIGHT * overall_auc) + ((1 - OVERALL_MODEL_WEIGHT) * bias_score)


# ---- authors' model_bias_analysis.py ----
def normalized_mwu(data1, data2, model_name):
    scores_1 = data1[model_name]
    scores_2 = data2[model_name]
    n1 = len(scores_1)
    n2 = len(scores_2)
    if n1 == 0 or n2 == 0:
        return None
    u, _ = stats.mannwhitneyu(scores_1, scores_2, alternative='less')
    return u / (n1 * n2)


def compute_negative_aeg(df, subgroup, label, model_name):
    mwu = normalized_mwu(df[~df[subgroup] & ~df[label]], df[df[subgroup] & ~df[label]], model_name)
    if mwu is None:
        return None
    return 0.5 - mwu


def compute_positive_aeg(df, subgroup, label, model_name):
    mwu = normalized_mwu(df[~df[subgroup] & df[label]], df[df[subgroup] & df[label]], model_name)
    if mwu is None:
        return None
    return 0.5 - mwu


def _ref_record(dataset, subgroup, model, label_col):
    record = {'subgroup': subgroup, 'subset_size': len(dataset[dataset[subgroup]])}
    record[model + '_subgroup_auc'] = compute_subgroup_auc(dataset, subgroup, label_col, model)
    record[model + '_bpsn_auc'] = compute_bpsn_auc(dataset, subgroup, label_col, model)
    record[model + '_bnsp_auc'] = compute_bnsp_auc(dataset, subgroup, label_col, model)
    record[model + '_negative_aeg'] = compute_negative_aeg(dataset, subgroup, label_col, model)
    record[model + '_positive_aeg'] = compute_positive_aeg(dataset, subgroup, label_col, model)
    return record


def ref_compute_bias_metrics_for_model(dataset, subgroups, model, label_col):
    return pd.DataFrame([_ref_record(dataset, s, model, label_col) for s in subgroups])


def compute_bias_metrics_for_models(dataset, subgroups, models, label_col, include_asegs=False):
    output = None
    for model in models:
        model_results = ref_compute_bias_metrics_for_model(dataset, subgroups, model, label_col)
        if output is None:
            output = model_results
        else:
            output = output.merge(model_results, on=['subgroup', 'subset_size'])
    return output
