"""Stage family 'classifiers'. Keep this file light: only the name -> 'module:Class' table."""

STAGES: dict[str, str] = {
    "train_quality_classifier": "curator.classifiers.quality:TrainQualityClassifier",
    "quality_filter": "curator.classifiers.quality:QualityFilter",
}
CLI = "curator.classifiers.cli"
