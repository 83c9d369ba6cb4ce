import pickle

from framework.components.slices import StreamSlice


def test_slice_views_keep_partition_and_window_apart():
    s = StreamSlice({"account_id": 7}, {"start_time": "a", "end_time": "b"}, {"name": "n"})
    variables = s.template_variables()
    assert variables["stream_slice"] == {"account_id": 7, "start_time": "a", "end_time": "b"}
    assert variables["stream_partition"] == {"account_id": 7}
    assert variables["stream_interval"] == {"start_time": "a", "end_time": "b"}
    assert variables["stream_slice"].extra_fields == {"name": "n"}


def test_slices_are_small_picklable_values():
    s = StreamSlice({"account_id": 7, "parent_slice": {}}, {"start_time": "a"})
    again = pickle.loads(pickle.dumps(s))
    assert again == s
    assert again.key() == s.key()
    assert StreamSlice({"b": 1, "a": 2}).key() == StreamSlice({"a": 2, "b": 1}).key()
