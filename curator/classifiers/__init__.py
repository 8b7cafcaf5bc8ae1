"""Stage family 'classifiers'. Keep this file light: only the name -> 'module:Class' table."""

STAGES: dict[str, str] = {
    "train_quality_classifier":
        "curator.classifiers.train_quality_classifier:TrainQualityClassifier",
    "quality_filter": "curator.classifiers.quality_filter:QualityFilter",
    "model_classifier": "curator.classifiers.model_classifier:ModelClassifier",
}
CLI = "curator.classifiers.cli"
