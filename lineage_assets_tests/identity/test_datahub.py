"""DataHub identity of datasets and fields (DESIGN.md section 8, "Field URNs"), no Spark.

Expected values come from DataHub's own sources, named above each case (repository
datahub-project/datahub unless another is named):
- converter: metadata-integration/java/openlineage-converter/src/main/java/io/datahubproject/
  openlineage/converter/OpenLineagePlatformResolver.java and .../dataset/HdfsPathDataset.java,
  HdfsPlatform.java, and their tests under metadata-integration/java/openlineage-converter/src/test
  and metadata-integration/java/acryl-spark-lineage/src/test/java/datahub/spark/
  OpenLineageEventToDatahubTest.java;
- field paths: docs/advanced/field-path-spec-v2.md ("spec") and
  metadata-ingestion/tests/unit/test_schema_util.py ("DataHub's unit tests", which pin what
  metadata-ingestion/src/datahub/ingestion/extractor/schema_util.py emits);
- encoding: metadata-ingestion/src/datahub/utilities/urn_encoder.py and
  metadata-ingestion/tests/unit/utilities/test_urn_encoder.py;
- the aspect: metadata-models/src/main/pegasus/com/linkedin/dataset/*.pdl.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lineage_assets.identity.datahub import (
    DataHubConfig,
    DatasetUrn,
    FieldUrn,
    UrnIndex,
    dataset_urn,
    datahub_name,
    decode,
    encode,
    field_paths,
    field_urn,
    normalise_path,
    parse_urn,
    platform_of,
    resolve_field,
    shared_v1_paths,
)
from lineage_assets.query.datahub_models import FineGrainedLineage, Upstream, UpstreamLineage

# --- namespace -> platform and DataHub name ------------------------------------------------------

PLATFORMS = [
    # OpenLineageDatasetIdentityTest.testMixedPlatformJobKeepsIndependentDatasetIdentities:
    # urn:li:dataset:(urn:li:dataPlatform:postgres,my_db.public.users,PROD); host and port dropped.
    ("postgres://database.example:5432", "my_db.public.users", "postgres", "my_db.public.users"),
    # HdfsPathDatasetTest.testNoMatchPathSpecList: s3a://my-bucket/foo/tests/bar.avro ->
    # urn:li:dataset:(urn:li:dataPlatform:s3,my-bucket/foo/tests/bar.avro,PROD).
    ("s3a://my-bucket", "/foo/tests/bar.avro", "s3", "my-bucket/foo/tests/bar.avro"),
    # HdfsPlatform: S3(["s3", "s3a", "s3n"], "s3"); HdfsPathDataset.getDatasetName keeps the bucket.
    ("s3n://my-bucket", "foo/bar", "s3", "my-bucket/foo/bar"),
    # OpenLineageDatasetIdentityTest.testMissingLogicalNameKeepsPhysicalIdentity:
    # s3://warehouse-bucket + catalog/db/table -> s3,warehouse-bucket/catalog/db/table.
    ("s3://warehouse-bucket", "catalog/db/table", "s3", "warehouse-bucket/catalog/db/table"),
    # OpenLineageEventToDatahubTest.testGcsDataset and testGcsDatasetWithoutSlashInName (platform
    # gcs: HdfsPlatform GCS(["gs", "gcs"], "gcs")).
    ("gs://spark-integration-tests", "/spark-integration-test/test_gcs_delta_lake", "gcs",
     "spark-integration-tests/spark-integration-test/test_gcs_delta_lake"),
    ("gs://spark-integration-tests", "spark-integration-test/test_gcs_delta_lake", "gcs",
     "spark-integration-tests/spark-integration-test/test_gcs_delta_lake"),
    # HdfsPlatform: ABFS(["abfs", "abfss"], "abs") and WASB(["wasb", "wasbs"], "abs"); the name is
    # what follows "://" (HdfsPathDataset.getDatasetName).
    ("abfss://container@account.dfs.core.windows.net", "path/to/table", "abs",
     "container@account.dfs.core.windows.net/path/to/table"),
    ("wasbs://container@account.blob.core.windows.net", "/p", "abs", "container@account.blob.core.windows.net/p"),
    # OpenLineageEventToDatahubTest.testRemoveFilePrefixFromPath: namespace "file" keeps the name,
    # leading "/" included.
    ("file", "/tmp/streaming_output/file.txt", "file", "/tmp/streaming_output/file.txt"),
    # HdfsPathDataset.create: "If platform is file then we want to keep the ... slash": stripPrefix
    # of file:///tmp/x is /tmp/x.
    ("file://", "/tmp/x", "file", "/tmp/x"),
    # OpenLineagePlatformResolver: a namespace without "://" but a name with it (old Marquez
    # payloads, as in ../shared/fixtures) is read from the name: file://localhost/in_file1.txt.
    ("file.localhost", "file://localhost/in_file1.txt", "file", "localhost/in_file1.txt"),
    # OpenLineagePlatformResolver: no "://" -> `platform = namespace`, so Hive's `file:/...`
    # warehouse namespace (in ../shared/fixtures) is a platform of its own; see the override test.
    ("file:/tmp/cll_test", "default.tbl1", "file:/tmp/cll_test", "default.tbl1"),
    # HdfsPlatform.HDFS has no prefixes, so isFsPlatformPrefix("hdfs") is false: the scheme is the
    # platform and the OpenLineage name is kept.
    ("hdfs://namenode:8020", "/user/hive/warehouse/t", "hdfs", "/user/hive/warehouse/t"),
    # Any other scheme is the platform, the name kept (OpenLineagePlatformResolver).
    ("kafka://broker:9092", "orders", "kafka", "orders"),
    ("snowflake://org-account", "db.schema.t", "snowflake", "db.schema.t"),
    # A bare namespace is the platform (OpenLineagePlatformResolver: `platform = namespace`).
    ("bigquery", "project.dataset.t", "bigquery", "project.dataset.t"),
    # PLATFORM_MAP = {awsathena: athena, sqlserver: mssql}.
    ("awsathena://athena.us-east-1.amazonaws.com", "catalog.db.t", "athena", "catalog.db.t"),
    ("sqlserver://host:1433", "db.dbo.t", "mssql", "db.dbo.t"),
    # An unknown scheme: the converter uses `datasetUri.getScheme()` as it is.
    ("myscheme://host:1234", "a/b", "myscheme", "a/b"),
]


@pytest.mark.parametrize(("namespace", "name", "platform", "name_in_datahub"), PLATFORMS)
def test_platform_and_name_as_the_converter_derives_them(namespace, name, platform, name_in_datahub):
    assert platform_of(namespace, name=name) == platform
    assert datahub_name(namespace, name) == name_in_datahub
    assert dataset_urn(namespace, name) == f"urn:li:dataset:(urn:li:dataPlatform:{platform},{name_in_datahub},PROD)"


def test_overrides_by_namespace_win_over_overrides_by_scheme():
    overrides = {"postgresql": "postgres", "postgresql://special:5432": "postgres_special", "file:/tmp/cll_test": "hive"}
    assert platform_of("postgresql://warehouse:5432", overrides) == "postgres"  # by scheme
    assert platform_of("postgresql://special:5432", overrides) == "postgres_special"  # by namespace
    assert platform_of("file:/tmp/cll_test", overrides) == "hive"  # a bare namespace
    assert platform_of("postgresql://warehouse:5432") == "postgresql"  # no override: the scheme
    # An override changes the platform, not the name the converter derives.
    assert dataset_urn("s3a://b", "/x", DataHubConfig(platforms={"s3a": "s3_archive"})) == (
        "urn:li:dataset:(urn:li:dataPlatform:s3_archive,b/x,PROD)"
    )


def test_env_and_platforms_come_from_the_config():
    config = DataHubConfig(env="QA", platforms={"postgresql": "postgres"})
    assert dataset_urn("postgresql://warehouse:5432", "db.public.t", config) == (
        "urn:li:dataset:(urn:li:dataPlatform:postgres,db.public.t,QA)"
    )
    assert field_urn("postgresql://warehouse:5432", "db.public.t", "id", config).endswith(",QA),id)")


def test_config_from_the_environment():
    assert DataHubConfig.from_env({}) == DataHubConfig("PROD", {})
    config = DataHubConfig.from_env({"LINEAGE_DATAHUB_ENV": "dev", "LINEAGE_DATAHUB_PLATFORMS": '{"postgresql": "postgres"}'})
    assert config == DataHubConfig("DEV", {"postgresql": "postgres"})  # FabricType is upper case


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"LINEAGE_DATAHUB_ENV": "production"}, "LINEAGE_DATAHUB_ENV='production' is not one of"),
        ({"LINEAGE_DATAHUB_PLATFORMS": "{postgresql: postgres}"}, "LINEAGE_DATAHUB_PLATFORMS is not JSON"),
        ({"LINEAGE_DATAHUB_PLATFORMS": '["postgres"]'}, "LINEAGE_DATAHUB_PLATFORMS must be a JSON object"),
        ({"LINEAGE_DATAHUB_PLATFORMS": '{"postgresql": 5}'}, "LINEAGE_DATAHUB_PLATFORMS: platform override"),
        ({"LINEAGE_DATAHUB_PLATFORMS": '{"postgresql": ""}'}, "must be non-empty strings"),
    ],
)
def test_bad_configuration_is_a_clear_error(environ, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        DataHubConfig.from_env(environ)


# --- encoding and URNs ---------------------------------------------------------------------------


def test_encoding_is_datahubs_for_its_reserved_characters_and_also_escapes_percent():
    # test_urn_encoder.py: names with reserved characters become name.replace(",", "%2C")
    # .replace("(", "%28").replace(")", "%29"); names without them are unchanged.
    name = "test_database,(test$schema),test+table"
    assert encode(name) == name.replace(",", "%2C").replace("(", "%28").replace(")", "%29")
    assert encode("test-database.test-schema.test-table") == "test-database.test-schema.test-table"
    # urn_encoder.py: RESERVED_CHARS also holds the URN separator "␟" (quoted as UTF-8).
    assert encode("a␟b") == "a%E2%90%9Fb"
    # "%" is ours (DataHub leaves it), so an encoded "%2C" stays apart from an encoded ",".
    assert encode("50%2C") == "50%252C" != encode("50,")
    assert decode(encode("50%2C")) == "50%2C"
    assert decode("a%2cb") == "a,b"  # any hex case
    assert decode("a%20b") == "a%20b"  # only the escapes of reserved characters are decoded


AWKWARD = [
    "db.t,with,commas",
    "f(x)",
    "close) open(",
    "a:b:c",
    "dir/sub/t",
    "100% done %2C %25",
    "with spaces and \"double\" and 'single' quotes",
    "café.ünïcode",
    "日本語",
    "[version=2.0] not a path",
]


@pytest.mark.parametrize("name", AWKWARD)
@pytest.mark.parametrize("namespace", ["postgres://db.example.com:5432", "s3://bucket", "kafka://broker:9092", "bigquery"])
def test_dataset_and_field_urns_round_trip_to_the_node(namespace, name):
    index = UrnIndex.build([(namespace, name), ("postgres://other:5432", "unrelated")])
    urn = dataset_urn(namespace, name)
    assert isinstance(parse_urn(urn), DatasetUrn)
    assert parse_urn(urn).name == datahub_name(namespace, name)
    assert index.resolve(urn) == (namespace, name, None)
    field = name if not name.startswith("[version=2.0]") else "not " + name  # a v1 path
    f_urn = field_urn(namespace, name, field)
    assert parse_urn(f_urn) == FieldUrn(parse_urn(urn), field)
    assert index.resolve(f_urn) == (namespace, name, field)


def test_both_path_forms_of_a_field_urn_resolve_to_the_same_field():
    # spec, "Nested Record": the v2 path and its v1 form (the downgrade of field_paths.py).
    v2 = "[version=2.0].[type=SimpleNested].[type=InnerRcd].nestedRcd.[type=string].aStringField"
    index = UrnIndex.build([("kafka://broker:9092", "events")])
    by_v2 = index.resolve(field_urn("kafka://broker:9092", "events", v2))
    by_v1 = index.resolve(field_urn("kafka://broker:9092", "events", "nestedRcd.aStringField"))
    assert by_v2 == by_v1 == ("kafka://broker:9092", "events", "nestedRcd.aStringField")


def test_datahubs_converter_urns_break_on_a_comma_ours_do_not():
    # OpenLineageToDataHub.getFineGrainedLineage builds "urn:li:schemaField:(" + urn + "," + field
    # + ")" without escaping; a field "a,b" then reads as three parts.
    dataset = dataset_urn("kafka://broker:9092", "events")
    with pytest.raises(ValueError, match="must have 2 parts"):
        parse_urn(f"urn:li:schemaField:({dataset},a,b)")
    assert parse_urn(field_urn("kafka://broker:9092", "events", "a,b")).path == "a,b"


def test_unknown_and_ambiguous_urns():
    # The converter drops host and port, so two Postgres servers' db.public.t share one URN.
    index = UrnIndex.build([("postgres://a:5432", "db.public.t"), ("postgres://b:5432", "db.public.t")])
    with pytest.raises(ValueError, match="ambiguous.*'postgres://a:5432' 'db.public.t' and 'postgres://b:5432' 'db.public.t'"):
        index.resolve(dataset_urn("postgres://a:5432", "db.public.t"))
    assert index.resolve(dataset_urn("postgres://a:5432", "db.public.other")) is None
    assert index.resolve(dataset_urn("postgres://a:5432", "db.public.t", DataHubConfig(env="DEV"))) is None
    # A URN written with lower-case escapes names the same dataset.
    index = UrnIndex.build([("bigquery", "a,b")])
    assert index.resolve("urn:li:dataset:(urn:li:dataPlatform:bigquery,a%2cb,PROD)") == ("bigquery", "a,b", None)


DATASET = "urn:li:dataset:(urn:li:dataPlatform:kafka,events,PROD)"


@pytest.mark.parametrize(
    ("urn", "message"),
    [
        ("", "non-empty string"),
        ("urn:li:corpuser:jdoe", "must start with 'urn:li:dataset:' or 'urn:li:schemaField:'"),
        ("urn:li:dataset:urn:li:dataPlatform:kafka,events,PROD", r"expected '\(' after 'urn:li:dataset:'"),
        ("urn:li:dataset:(urn:li:dataPlatform:kafka,events,PROD", r"unbalanced parentheses \(a '\(' is never closed\)"),
        ("urn:li:dataset:(urn:li:dataPlatform:kafka,events,PROD))", "unbalanced parentheses .text after the closing"),
        ("urn:li:dataset:(urn:li:dataPlatform:kafka,a(b,PROD)", "unbalanced parentheses"),
        ("urn:li:dataset:(urn:li:dataPlatform:kafka,events)", r"3 parts \(platform, name, ENV\), found 2"),
        ("urn:li:dataset:(urn:li:dataPlatform:kafka,a,b,PROD)", "3 parts .*found 4"),
        ("urn:li:dataset:(kafka,events,PROD)", "the platform must be a 'urn:li:dataPlatform:' URN"),
        ("urn:li:dataset:(urn:li:dataPlatform:,events,PROD)", "needs a platform"),
        ("urn:li:dataset:(urn:li:dataPlatform:kafka,,PROD)", "needs a name"),
        ("urn:li:dataset:(urn:li:dataPlatform:kafka,events,PRODUCTION)", "ENV 'PRODUCTION' is not one of"),
        (f"urn:li:schemaField:({DATASET})", r"2 parts \(dataset URN, field path\), found 1"),
        (f"urn:li:schemaField:({DATASET},)", "the field path is empty"),
        ("urn:li:schemaField:(urn:li:corpuser:jdoe,f)", "is not a dataset URN"),
        (f"urn:li:schemaField:({DATASET[:-1]},f)", "never closed"),
    ],
)
def test_malformed_urns_name_what_is_wrong(urn, message):
    with pytest.raises(ValueError, match=message):
        parse_urn(urn)


# --- field paths ---------------------------------------------------------------------------------
# Each spec example is written as the OpenLineage schema facet that describes the same shape
# (OpenLineage/OpenLineage website/docs/spec/facets/dataset-facets/schema.md: a struct's members
# in `fields`, an array's `_element`, a map's `key`/`value`, a union's `_0`, `_1`, ...; a named
# record's name is its `type`). Expected v2 paths are the spec's paths that end at a field (those
# ending at an intermediate type, like "[version=2.0].[type=E]", are not emitted by DataHub's
# converter: see DataHub's unit tests), plus, for unions, the union field's own path that DataHub's
# unit tests show the converter emits (test_union_with_nested_record_of_union:
# "[version=2.0].[type=UnionSample].[type=union].aUnion").

SPEC_CASES = {
    # spec, "Records / Simple Record" (record "some.event.E" shows as E).
    "simple record": (
        [{"name": "a", "type": "string"}, {"name": "b", "type": "string"}],
        {"record": "some.event.E"},
        [
            ("[version=2.0].[type=E].[type=string].a", "a", "a"),
            ("[version=2.0].[type=E].[type=string].b", "b", "b"),
        ],
    ),
    # spec, "Records / Nested Record" (a key schema in the spec).
    "nested record": (
        [{"name": "nestedRcd", "type": "InnerRcd", "fields": [{"name": "aStringField", "type": "string"}]}],
        {"record": "SimpleNested", "key": True},
        [
            ("[version=2.0].[key=True].[type=SimpleNested].[type=InnerRcd].nestedRcd", "nestedRcd", "nestedRcd"),
            ("[version=2.0].[key=True].[type=SimpleNested].[type=InnerRcd].nestedRcd.[type=string].aStringField",
             "nestedRcd.aStringField", "nestedRcd.aStringField"),
        ],
    ),
    # spec, "Unions" (its paths name the record ABFooUnion although its schema says ABUnion).
    "union": (
        [{"name": "a", "type": "union", "fields": [
            {"name": "_0", "type": "A", "fields": [{"name": "f", "type": "string"}]},
            {"name": "_1", "type": "B", "fields": [{"name": "f", "type": "string"}]},
        ]}],
        {"record": "ABFooUnion", "key": True},
        [
            ("[version=2.0].[key=True].[type=ABFooUnion].[type=union].a", "a", "a"),  # DataHub's unit tests
            ("[version=2.0].[key=True].[type=ABFooUnion].[type=union].[type=A].a", "a", "a"),
            ("[version=2.0].[key=True].[type=ABFooUnion].[type=union].[type=A].a.[type=string].f", "a.f", "a._0.f"),
            ("[version=2.0].[key=True].[type=ABFooUnion].[type=union].[type=B].a", "a", "a"),
            ("[version=2.0].[key=True].[type=ABFooUnion].[type=union].[type=B].a.[type=string].f", "a.f", "a._1.f"),
        ],
    ),
    # spec, "Arrays": an array of arrays of an optional record (a union with null).
    "array": (
        [{"name": "ar", "type": "array", "fields": [{"name": "_element", "type": "array", "fields": [
            {"name": "_element", "type": "union", "fields": [
                {"name": "_0", "type": "null"},
                {"name": "_1", "type": "Foo", "fields": [{"name": "a", "type": "long"}]},
            ]},
        ]}]}],
        {"record": "NestedArray"},
        [
            ("[version=2.0].[type=NestedArray].[type=array].[type=array].[type=Foo].ar", "ar", "ar"),
            ("[version=2.0].[type=NestedArray].[type=array].[type=array].[type=Foo].ar.[type=long].a",
             "ar.a", "ar._element._element._1.a"),
        ],
    ),
    # spec, "Maps" (the key has no path).
    "map": (
        [{"name": "a_map_of_longs_field", "type": "map", "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": "long"}]}],
        {"record": "R"},
        [("[version=2.0].[type=R].[type=map].[type=long].a_map_of_longs_field", "a_map_of_longs_field", "a_map_of_longs_field")],
    ),
    # spec, "Maps", with the map given by its type string only.
    "map type string": (
        [{"name": "a_map_of_longs_field", "type": "map<string,long>"}],
        {"record": "R"},
        [("[version=2.0].[type=R].[type=map].[type=long].a_map_of_longs_field", "a_map_of_longs_field", "a_map_of_longs_field")],
    ),
    # spec, "Mixed Complex Type Examples": a union of two records and an array of arrays of an
    # optional record.
    "mixed": (
        [{"name": "a", "type": "union", "fields": [
            {"name": "_0", "type": "A", "fields": [{"name": "f", "type": "string"}]},
            {"name": "_1", "type": "B", "fields": [{"name": "f", "type": "string"}]},
            {"name": "_2", "type": "array", "fields": [{"name": "_element", "type": "array", "fields": [
                {"name": "_element", "type": "union", "fields": [
                    {"name": "_0", "type": "null"},
                    {"name": "_1", "type": "Foo", "fields": [{"name": "f", "type": "long"}]},
                ]},
            ]}]},
        ]}],
        {"record": "ABFooUnion"},
        [
            ("[version=2.0].[type=ABFooUnion].[type=union].a", "a", "a"),  # DataHub's unit tests
            ("[version=2.0].[type=ABFooUnion].[type=union].[type=A].a", "a", "a"),
            ("[version=2.0].[type=ABFooUnion].[type=union].[type=A].a.[type=string].f", "a.f", "a._0.f"),
            ("[version=2.0].[type=ABFooUnion].[type=union].[type=B].a", "a", "a"),
            ("[version=2.0].[type=ABFooUnion].[type=union].[type=B].a.[type=string].f", "a.f", "a._1.f"),
            ("[version=2.0].[type=ABFooUnion].[type=union].[type=array].[type=array].[type=Foo].a", "a", "a"),
            ("[version=2.0].[type=ABFooUnion].[type=union].[type=array].[type=array].[type=Foo].a.[type=long].f",
             "a.f", "a._2._element._element._1.f"),
        ],
    ),
    # DataHub's unit tests, test_map_of_union_of_int_and_record_of_union: a map of a union of int
    # and a record whose member is a union of null, string and int (three members: not optional).
    "map of union": (
        [{"name": "aMap", "type": "map", "fields": [
            {"name": "key", "type": "string"},
            {"name": "value", "type": "union", "fields": [
                {"name": "_0", "type": "int"},
                {"name": "_1", "type": "Rcd", "fields": [{"name": "aUnion", "type": "union", "fields": [
                    {"name": "_0", "type": "null"}, {"name": "_1", "type": "string"}, {"name": "_2", "type": "int"},
                ]}]},
            ]},
        ]}],
        {"record": "com.linkedin.MapSample"},
        [
            ("[version=2.0].[type=MapSample].[type=map].[type=union].aMap", "aMap", "aMap"),
            ("[version=2.0].[type=MapSample].[type=map].[type=union].[type=int].aMap", "aMap", "aMap"),
            ("[version=2.0].[type=MapSample].[type=map].[type=union].[type=Rcd].aMap", "aMap", "aMap"),
            ("[version=2.0].[type=MapSample].[type=map].[type=union].[type=Rcd].aMap.[type=union].aUnion",
             "aMap.aUnion", "aMap.value._1.aUnion"),
            ("[version=2.0].[type=MapSample].[type=map].[type=union].[type=Rcd].aMap.[type=union].[type=string].aUnion",
             "aMap.aUnion", "aMap.value._1.aUnion"),
            ("[version=2.0].[type=MapSample].[type=map].[type=union].[type=Rcd].aMap.[type=union].[type=int].aUnion",
             "aMap.aUnion", "aMap.value._1.aUnion"),
        ],
    ),
}


@pytest.mark.parametrize("case", list(SPEC_CASES))
def test_v1_and_v2_paths_of_the_spec_examples(case):
    fields, options, expected = SPEC_CASES[case]
    paths = field_paths(fields, **options)
    assert [(p.v2, p.v1, p.ol_name) for p in paths] == expected
    for p in paths:
        assert normalise_path(p.v2) == p.v1  # DataHub's downgrade (field_paths.py)
        assert normalise_path(p.v1) == p.v1
        assert resolve_field(paths, p.v2) == p.ol_name


def test_a_nested_openlineage_schema_facet_gives_both_forms():
    # The example of OpenLineage's schema.md (struct, array of strings, map of a union); the
    # dataset's record has no name, shown as DataHub shows its anonymous `__struct_` records
    # (schema_util.py _get_type_annotation), and the primitive types are the facet's.
    fields = [
        {"name": "id", "type": "int", "description": "Customer's identifier"},
        {"name": "phones", "type": "array", "fields": [{"name": "_element", "type": "string"}]},
        {"name": "address", "type": "struct", "fields": [{"name": "zip", "type": "string"}, {"name": "street", "type": "string"}]},
        {"name": "custom_properties", "type": "map", "fields": [
            {"name": "key", "type": "string"},
            {"name": "value", "type": "union", "fields": [{"name": "_0", "type": "string"}, {"name": "_1", "type": "int64"}]},
        ]},
    ]
    paths = field_paths(fields)
    top = "[version=2.0].[type=struct]"
    assert [(p.v2, p.v1, p.ol_name) for p in paths] == [
        (f"{top}.[type=int].id", "id", "id"),
        (f"{top}.[type=array].[type=string].phones", "phones", "phones"),
        (f"{top}.[type=struct].address", "address", "address"),
        (f"{top}.[type=struct].address.[type=string].zip", "address.zip", "address.zip"),
        (f"{top}.[type=struct].address.[type=string].street", "address.street", "address.street"),
        (f"{top}.[type=map].[type=union].custom_properties", "custom_properties", "custom_properties"),
        (f"{top}.[type=map].[type=union].[type=string].custom_properties", "custom_properties", "custom_properties"),
        (f"{top}.[type=map].[type=union].[type=int64].custom_properties", "custom_properties", "custom_properties"),
    ]
    # Either form of a path names the same field; a path the schema does not hold names nothing.
    assert resolve_field(paths, f"{top}.[type=struct].address.[type=string].zip") == "address.zip"
    assert resolve_field(paths, "address.zip") == "address.zip"
    assert resolve_field(paths, "[version=2.0].[type=other].[type=string].address.zip") == "address.zip"
    assert resolve_field(paths, "address.city") is None


def test_a_v1_path_two_union_members_share_is_a_value_error_naming_their_v2_paths():
    """`a._0.f` and `a._1.f` are both `a.f` in v1: the v1 path names no field rather than the
    first (before: it named `a._0.f`, so the v1 URN of `a._1.f` led back to another field); each
    v2 path names its own, and `shared_v1_paths` says which v1 paths a schema cannot use."""
    fields, options, _ = SPEC_CASES["union"]
    paths = field_paths(fields, **options)
    union = "[version=2.0].[key=True].[type=ABFooUnion].[type=union]"
    with pytest.raises(ValueError, match="names 2 fields") as raised:
        resolve_field(paths, "a.f")
    assert f"{union}.[type=A].a.[type=string].f" in str(raised.value) and f"{union}.[type=B].a.[type=string].f" in str(raised.value)
    assert resolve_field(paths, f"{union}.[type=B].a.[type=string].f") == "a._1.f"
    assert resolve_field(paths, "a") == "a"  # three paths of one field: not ambiguous
    assert shared_v1_paths(paths) == {"a.f"}
    assert shared_v1_paths(field_paths(SPEC_CASES["array"][0], **SPEC_CASES["array"][1])) == set()


def test_type_strings_give_the_same_paths_as_nested_fields():
    # HiveColumnToAvroConverter (hive_schema_to_avro.py) reads array<...>, map<k,v>, struct<n:t,...>
    # and uniontype<...>; a facet entry with nested `fields` and one with only the type string
    # describe the same shape, so their v2 and v1 paths are equal.
    nested = [{"name": "arr", "type": "array", "fields": [{"name": "_element", "type": "struct", "fields": [
        {"name": "a", "type": "int"},
        {"name": "b", "type": "map", "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": "decimal(10,2)"}]},
    ]}]}]
    typed = [{"name": "arr", "type": "array<struct<a:int,b:map<string,decimal(10,2)>>>"}]
    assert [(p.v2, p.v1) for p in field_paths(typed)] == [(p.v2, p.v1) for p in field_paths(nested)]
    assert [p.ol_name for p in field_paths(nested)] == ["arr", "arr._element.a", "arr._element.b"]
    # A repeated name keeps its first entry (as flatten_schema does, and HiveColumnToAvroConverter's
    # `if not any(field["name"] == field_name ...)`).
    repeated = [{"name": "a", "type": "int"}, {"name": "a", "type": "string"}]
    assert [p.v2 for p in field_paths(repeated)] == ["[version=2.0].[type=struct].[type=int].a"]
    # A type string that does not parse is a plain type, not an error.
    assert [p.v2 for p in field_paths([{"name": "x", "type": "array<int"}])] == ["[version=2.0].[type=struct].[type=array<int].x"]


def test_normalise_path_is_datahubs_downgrade():
    # field_paths.py get_simple_field_path_from_v2_field_path: a path not starting with
    # "[version=2.0]" is kept; otherwise tokens starting with "[" or ending with "]" go.
    assert normalise_path("a.b") == "a.b"
    assert normalise_path("[version=2.0].[key=True].[type=R].[type=map].[type=long].m") == "m"
    assert normalise_path("[version=2.0].[type=struct].[type=decimal(10,2)].x") == "x"


# --- the UpstreamLineage aspect ------------------------------------------------------------------

SOURCE = ("postgres://db.example.com:5432", "shop.public.orders")
TARGET = ("s3a://lake", "/marts/orders,daily")


def _fine_grained(**overrides) -> dict:
    aspect = {
        "upstreamType": "FIELD_SET",
        "upstreams": [field_urn(*SOURCE, "amount"), field_urn(*SOURCE, "currency")],
        "downstreamType": "FIELD",
        "downstreams": [field_urn(*TARGET, "amount(eur)")],
        "transformOperation": "DIRECT:TRANSFORMATION",
        "confidenceScore": 1.0,
    }
    return {**aspect, **overrides}


def test_an_aspect_built_from_urns_validates():
    aspect = UpstreamLineage(
        upstreams=[Upstream(dataset=dataset_urn(*SOURCE), type="TRANSFORMED")],
        fineGrainedLineages=[FineGrainedLineage(**_fine_grained())],
    )
    dumped = aspect.model_dump(exclude_none=True)
    assert UpstreamLineage.model_validate(dumped) == aspect
    # Upstream.pdl: auditStamp defaults to {"time": 0, "actor": "urn:li:corpuser:unknown"}.
    assert dumped["upstreams"][0]["auditStamp"] == {"time": 0, "actor": "urn:li:corpuser:unknown"}
    # FineGrainedLineage.pdl: confidenceScore defaults to 1.0.
    assert FineGrainedLineage(**{k: v for k, v in _fine_grained().items() if k != "confidenceScore"}).confidenceScore == 1.0
    # FineGrainedLineageUpstreamType.pdl DATASET: upstreams are dataset URNs.
    FineGrainedLineage(**_fine_grained(upstreamType="DATASET", upstreams=[dataset_urn(*SOURCE)]))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"downstreamType": "DATASET"}, "downstreamType"),  # FineGrainedLineageDownstreamType: FIELD, FIELD_SET
        ({"upstreamType": "FIELDS"}, "upstreamType"),
        ({"upstreams": ["urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:kafka,t,PROD),a"]}, "unbalanced parentheses"),
        ({"upstreams": [dataset_urn(*SOURCE)]}, "upstreamType FIELD_SET must be a schemaField URN"),
        ({"upstreamType": "DATASET"}, "upstreamType DATASET must be a dataset URN"),
        ({"upstreamType": "NONE"}, "NONE takes no upstreams"),
        ({"downstreams": [dataset_urn(*TARGET)]}, "a downstream must be a schemaField URN"),
        ({"downstreams": [field_urn(*TARGET, "a"), field_urn(*TARGET, "b")]}, "FIELD takes exactly one downstream"),
        ({"confidenceScore": 1.5}, "confidenceScore"),
        ({"query": "select 1"}, "is not a URN"),
        ({"upstreamTypes": "FIELD_SET"}, "Extra inputs are not permitted"),
    ],
)
def test_a_wrong_fine_grained_lineage_fails_validation(overrides, message):
    with pytest.raises(ValidationError, match=message):
        FineGrainedLineage(**_fine_grained(**overrides))


def test_a_wrong_upstream_fails_validation():
    with pytest.raises(ValidationError, match="Upstream.dataset must be a dataset URN"):
        Upstream(dataset=field_urn(*SOURCE, "amount"), type="TRANSFORMED")
    with pytest.raises(ValidationError, match="type"):
        Upstream(dataset=dataset_urn(*SOURCE), type="DERIVED")  # DatasetLineageType: COPY, TRANSFORMED, VIEW
