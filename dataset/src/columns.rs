//! Typed values out of Arrow columns, accepting the layouts LeRobot datasets use: vectors as
//! fixed-size lists (HF datasets' `Sequence(length=n)`) or plain lists, scalars as primitive
//! columns, floats as f32 or f64.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, OffsetSizeTrait};
use arrow_schema::DataType;

/// What is wrong with a column: all of it, or from one row on (the caller names the row's
/// episode).
#[derive(Debug)]
pub(crate) enum Problem {
    Column(String),
    Row { row: usize, problem: String },
}

fn first_null(array: &dyn Array) -> Result<(), Problem> {
    match array.logical_nulls().and_then(|n| (0..array.len()).find(|&i| n.is_null(i))) {
        Some(row) => Err(Problem::Row { row, problem: "null value".into() }),
        None => Ok(()),
    }
}

/// `[rows, width]` values of a float feature, row-major, as f32.
pub(crate) fn floats(array: &ArrayRef, width: usize) -> Result<Vec<f32>, Problem> {
    first_null(array.as_ref())?;
    match array.data_type() {
        DataType::Float32 | DataType::Float64 if width == 1 => flat_floats(array.as_ref()),
        DataType::FixedSizeList(_, size) => {
            let list = array.as_fixed_size_list();
            if *size as usize != width {
                let problem = format!("rows have {size} values; info.json declares shape [{width}]");
                return Err(Problem::Row { row: 0, problem });
            }
            let start = list.value_offset(0).max(0) as usize;
            let values = list.values().slice(start, list.len() * width);
            first_null(values.as_ref())?;
            flat_floats(values.as_ref())
        }
        DataType::List(_) => list_floats(array.as_list::<i32>(), width),
        DataType::LargeList(_) => list_floats(array.as_list::<i64>(), width),
        other => Err(Problem::Column(format!("has type {other}; expected a list of {width} floats"))),
    }
}

fn list_floats<O: OffsetSizeTrait>(list: &arrow_array::GenericListArray<O>, width: usize) -> Result<Vec<f32>, Problem> {
    let offsets = list.value_offsets();
    for row in 0..list.len() {
        let n = (offsets[row + 1] - offsets[row]).as_usize();
        if n != width {
            return Err(Problem::Row {
                row,
                problem: format!("row has {n} values; info.json declares shape [{width}]"),
            });
        }
    }
    let (start, end) = (offsets[0].as_usize(), offsets[list.len()].as_usize());
    let values = list.values().slice(start, end - start);
    first_null(values.as_ref())?;
    flat_floats(values.as_ref())
}

fn flat_floats(array: &dyn Array) -> Result<Vec<f32>, Problem> {
    match array.data_type() {
        DataType::Float32 => Ok(array.as_primitive::<Float32Type>().values().to_vec()),
        DataType::Float64 => Ok(array.as_primitive::<Float64Type>().values().iter().map(|&v| v as f32).collect()),
        other => Err(Problem::Column(format!("holds {other} values; expected float32 or float64"))),
    }
}

/// Values of an integer scalar column.
pub(crate) fn ints(array: &ArrayRef) -> Result<Vec<i64>, Problem> {
    first_null(array.as_ref())?;
    match array.data_type() {
        DataType::Int64 => Ok(array.as_primitive::<Int64Type>().values().to_vec()),
        DataType::Int32 => Ok(array.as_primitive::<Int32Type>().values().iter().map(|&v| i64::from(v)).collect()),
        DataType::UInt32 => Ok(array.as_primitive::<UInt32Type>().values().iter().map(|&v| i64::from(v)).collect()),
        DataType::UInt64 => array
            .as_primitive::<UInt64Type>()
            .values()
            .iter()
            .map(|&v| i64::try_from(v).map_err(|_| Problem::Column(format!("value {v} out of range"))))
            .collect(),
        other => Err(Problem::Column(format!("has type {other}; expected int64"))),
    }
}

/// Values of a boolean scalar column.
pub(crate) fn bools(array: &ArrayRef) -> Result<Vec<bool>, Problem> {
    first_null(array.as_ref())?;
    match array.data_type() {
        DataType::Boolean => Ok(array.as_boolean().iter().map(|v| v.unwrap_or(false)).collect()),
        other => Err(Problem::Column(format!("has type {other}; expected bool"))),
    }
}

/// Values of a string column, or of a list-of-strings column (one list per row).
pub(crate) fn string_lists(array: &ArrayRef) -> Result<Vec<Vec<String>>, Problem> {
    first_null(array.as_ref())?;
    let strings = |a: &dyn Array| -> Result<Vec<String>, Problem> {
        match a.data_type() {
            DataType::Utf8 => Ok(a.as_string::<i32>().iter().map(|s| s.unwrap_or_default().to_string()).collect()),
            DataType::LargeUtf8 => Ok(a.as_string::<i64>().iter().map(|s| s.unwrap_or_default().to_string()).collect()),
            DataType::Utf8View => Ok(a.as_string_view().iter().map(|s| s.unwrap_or_default().to_string()).collect()),
            other => Err(Problem::Column(format!("has type {other}; expected strings"))),
        }
    };
    match array.data_type() {
        // Rows are not null (checked above).
        DataType::List(_) => {
            array.as_list::<i32>().iter().map(|row| row.map_or(Ok(vec![]), |r| strings(r.as_ref()))).collect()
        }
        DataType::LargeList(_) => {
            array.as_list::<i64>().iter().map(|row| row.map_or(Ok(vec![]), |r| strings(r.as_ref()))).collect()
        }
        _ => Ok(strings(array.as_ref())?.into_iter().map(|s| vec![s]).collect()),
    }
}

/// The encoded bytes of each row of an image column (copied out): LeRobot's struct of `bytes`
/// (binary) and `path` (string), or a plain binary column.
pub(crate) fn image_bytes(array: &ArrayRef) -> Result<Vec<Vec<u8>>, Problem> {
    first_null(array.as_ref())?;
    let binary = match array.data_type() {
        DataType::Struct(_) => match array.as_struct().column_by_name("bytes") {
            Some(b) => b.clone(),
            None => return Err(Problem::Column("is a struct without a `bytes` field".into())),
        },
        DataType::Binary | DataType::LargeBinary => array.clone(),
        other => return Err(Problem::Column(format!("has type {other}; expected an image struct of PNG bytes"))),
    };
    first_null(binary.as_ref())?;
    match binary.data_type() {
        DataType::Binary => {
            let b = binary.as_binary::<i32>();
            Ok((0..b.len()).map(|i| b.value(i).to_vec()).collect())
        }
        DataType::LargeBinary => {
            let b = binary.as_binary::<i64>();
            Ok((0..b.len()).map(|i| b.value(i).to_vec()).collect())
        }
        other => Err(Problem::Column(format!("`bytes` has type {other}; expected binary"))),
    }
}
