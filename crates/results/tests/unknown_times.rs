//! A time the volume does not keep (FILETIME 0) in every format: empty in CSV, TSV and the table, `null` in JSON
//! lines, null in Parquet (the timestamp and its `_filetime`), 0 in a body file, and 0 again when a dataset's
//! file is read back into an index; a known time beside it prints as ever.

use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch as ArrowBatch, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use uffs_index::batch::{NameInfo, RecordBatch, RecordInfo, StdInfo, StreamSizes};
use uffs_index::time::{UNIX_EPOCH, UNKNOWN};
use uffs_index::{BuildOptions, Builder, EntryId, Index, VolumeMeta};
use uffs_query::Searcher;
use uffs_results::export::{self, Filter, Format as ExportFormat};
use uffs_results::{Format, OutputArgs, Printer};

/// 2024-05-01T12:34:56.1234567Z.
const MODIFIED: u64 = 133_590_404_961_234_567;
const MODIFIED_ISO: &str = "2024-05-01T12:34:56.1234567Z";

/// A root and one file, `old.txt`, whose creation, change and access times the volume does not keep (as on
/// ext2, or FAT's change time); its `$FILE_NAME` times are unknown too, but for modified.
fn index() -> Index {
    let mut b = RecordBatch::default();
    let mut add = |number: u64, dir: bool, name: &str, si: StdInfo| {
        let start = b.text.len() as u32;
        b.text.extend_from_slice(name.as_bytes());
        let n0 = b.names.len() as u32;
        b.names.push(NameInfo {
            parent: 5 | 1 << 48,
            namespace: 1,
            modified: si.modified,
            text: start..b.text.len() as u32,
            ..Default::default()
        });
        b.records.push(RecordInfo {
            number,
            sequence: 1,
            header_flags: 1 | if dir { 2 } else { 0 },
            std_info: Some(si),
            data: (!dir).then_some(StreamSizes {
                size: 5,
                allocated: 4096,
                ..StreamSizes::default()
            }),
            names: n0..b.names.len() as u32,
            ..Default::default()
        });
    };
    let known = StdInfo {
        created: UNIX_EPOCH,
        modified: UNIX_EPOCH,
        mft_changed: UNIX_EPOCH,
        accessed: UNIX_EPOCH,
        attributes: 0x10,
    };
    add(5, true, ".", known);
    add(
        16,
        false,
        "old.txt",
        StdInfo {
            created: UNKNOWN,
            modified: MODIFIED,
            mft_changed: UNKNOWN,
            accessed: UNKNOWN,
            attributes: 0x20,
        },
    );
    let meta = VolumeMeta {
        records_total: 17,
        ..VolumeMeta::default()
    };
    let mut builder = Builder::new(meta, BuildOptions::default(), 2);
    builder.add_batch(&b);
    builder.finish().0
}

fn file_id(idx: &Index) -> EntryId {
    (0..idx.len() as EntryId)
        .find(|&id| idx.name(id) == "old.txt")
        .expect("old.txt")
}

fn export(idx: &Index, format: ExportFormat) -> String {
    let mut out = Vec::new();
    let filter = Filter {
        deleted: false,
        streams: false,
        hidden: None,
    };
    export::write_rows(idx, "", format, filter, &mut out, &|_| {}).expect("export");
    String::from_utf8(out).expect("utf-8")
}

fn print(idx: &Index, format: Format) -> String {
    let s = Searcher::new(Arc::new(idx.clone()));
    let a = OutputArgs {
        format: Some(format),
        columns: [
            "path",
            "created",
            "modified",
            "mft_changed",
            "accessed",
            "fn_created",
            "fn_modified",
        ]
        .map(String::from)
        .to_vec(),
        ..OutputArgs::default()
    };
    let mut out = Vec::new();
    let mut p = Printer::to_writer(Box::new(&mut out), &a, false).expect("printer");
    p.rows(&s, "", &[file_id(idx)]).expect("rows");
    p.finish().expect("finish");
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn the_fast_export_leaves_an_unknown_time_empty() {
    let idx = index();
    let csv = export(&idx, ExportFormat::Csv);
    let header = export::csv_header();
    let names: Vec<&str> = header.trim_end().split(',').collect();
    let row: Vec<&str> = csv
        .lines()
        .find(|l| l.starts_with("/old.txt,"))
        .expect("old.txt's row")
        .split(',')
        .collect();
    let cell = |n: &str| row[names.iter().position(|c| *c == n).expect(n)];
    for t in [
        "created",
        "mft_changed",
        "accessed",
        "fn_created",
        "fn_accessed",
    ] {
        assert_eq!(cell(t), "", "{t}: {csv}");
    }
    assert_eq!(cell("modified"), MODIFIED_ISO);
    assert_eq!(cell("fn_modified"), MODIFIED_ISO);
    assert!(!csv.contains("1601"), "{csv}");

    let json = export(&idx, ExportFormat::Jsonl);
    let v: serde_json::Value = json
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .find(|v| v["name"] == "old.txt")
        .expect("old.txt's line");
    for t in ["created", "mft_changed", "accessed", "fn_created"] {
        assert!(v[t].is_null(), "{t}: {v}");
    }
    assert_eq!(v["modified"], MODIFIED_ISO);
}

#[test]
fn the_printer_leaves_an_unknown_time_empty_in_every_format() {
    let idx = index();
    let csv = print(&idx, Format::Csv);
    assert_eq!(
        csv.lines().nth(1),
        Some(format!("/old.txt,,{MODIFIED_ISO},,,,{MODIFIED_ISO}").as_str()),
        "{csv}"
    );
    let tsv = print(&idx, Format::Tsv);
    assert_eq!(
        tsv.lines().nth(1),
        Some(format!("/old.txt\t\t{MODIFIED_ISO}\t\t\t\t{MODIFIED_ISO}").as_str()),
        "{tsv}"
    );
    let json: serde_json::Value = serde_json::from_str(print(&idx, Format::Jsonl).trim()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "path": "/old.txt", "created": null, "modified": MODIFIED_ISO, "mft_changed": null,
            "accessed": null, "fn_created": null, "fn_modified": MODIFIED_ISO,
        })
    );
    let table = print(&idx, Format::Table);
    assert!(!table.contains("1601"), "{table}");
    let row = table.lines().find(|l| l.contains("old.txt")).expect(&table);
    // Two known times to the minute, and nothing for the other four.
    assert_eq!(row.matches("2024-05-01 12:34").count(), 2, "{table}");
}

#[test]
fn a_body_file_has_0_for_an_unknown_time() {
    let idx = index();
    let body = export(&idx, ExportFormat::Bodyfile);
    let row: Vec<&str> = body
        .lines()
        .find(|l| l.starts_with("0|/old.txt|"))
        .expect(&body)
        .split('|')
        .collect();
    // atime, mtime, ctime, crtime
    assert_eq!(row[7..], ["0", "1714566896", "0", "0"], "{body}");
}

#[test]
fn parquet_and_datasets_hold_an_unknown_time_as_null_and_read_it_back_as_0() {
    let idx = index();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("unknown-times");
    let _ = std::fs::remove_dir_all(&dir);
    let w = uffs_results::dataset::write_volume(
        &dir,
        "h",
        "v",
        &[uffs_results::dataset::Part {
            index: &idx,
            prefix: "",
            hidden: None,
        }],
        false,
        false,
        &|_| {},
    )
    .expect("dataset");
    let bytes = bytes::Bytes::from(std::fs::read(&w.file).expect("read file"));
    let batches: Vec<ArrowBatch> = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .expect("parquet")
        .build()
        .expect("reader")
        .collect::<Result<_, _>>()
        .expect("batches");
    let (batch, row) = batches
        .iter()
        .find_map(|b| {
            let names = b.column_by_name("name")?;
            let names = names.as_any().downcast_ref::<StringArray>()?;
            let row = (0..names.len()).find(|&i| names.value(i) == "old.txt")?;
            Some((b, row))
        })
        .expect("old.txt's row");
    for t in ["created", "mft_changed", "accessed", "fn_created"] {
        for c in [t.to_string(), format!("{t}_filetime")] {
            assert!(batch.column_by_name(&c).unwrap().is_null(row), "{c}");
        }
    }
    let modified = batch.column_by_name("modified_filetime").unwrap();
    let modified = modified.as_any().downcast_ref::<Int64Array>().unwrap();
    assert_eq!(modified.value(row), MODIFIED as i64);

    // Read back, null is unknown again: the same index, the same rows.
    let back = uffs_results::dataset::read::read_volume(&w.file, 1).expect("read back");
    let id = file_id(&back);
    assert_eq!(
        [back.created(id), back.mft_changed(id), back.accessed(id)],
        [UNKNOWN; 3]
    );
    assert_eq!(back.modified(id), MODIFIED);
    assert_eq!(
        export(&back, ExportFormat::Csv),
        export(&idx, ExportFormat::Csv)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
