"""Where a local Spark's pieces are (framework/spark/home.py): the ``spark-defaults.conf`` it reads."""

from __future__ import annotations

from framework.spark.home import spark_defaults


def test_spark_defaults_is_read_as_java_properties(tmp_path):
    (tmp_path / "spark-defaults.conf").write_text("# a comment\n! another\nspark.executor.memory   2g\n"
                                                  "spark.ui.enabled=true\nspark.app.x: y z\n\n")
    env = {"SPARK_CONF_DIR": str(tmp_path)}
    assert spark_defaults(env) == {"spark.executor.memory": "2g", "spark.ui.enabled": "true", "spark.app.x": "y z"}
    assert spark_defaults({"SPARK_CONF_DIR": str(tmp_path / "missing")}) == {}
    (tmp_path / "home" / "conf").mkdir(parents=True)
    (tmp_path / "home" / "conf" / "spark-defaults.conf").write_text("spark.a 1\n")
    assert spark_defaults({"SPARK_HOME": str(tmp_path / "home")}) == {"spark.a": "1"}
