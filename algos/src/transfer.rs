//! Moving data between host slices and tensors on the training device. Every device-to-host
//! read goes through [`to_host`], which counts it, so that a test can prove a loop stays on
//! the device.

use burn::tensor::{Device, Tensor, TensorData};

use crate::AlgoError;

/// Uploads a host batch `[rows, cols]` to `device`.
pub(crate) fn to_tensor(data: &[f32], rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(data.to_vec(), [rows, cols]), device)
}

thread_local! {
    /// Device-to-host reads made by [`to_host`] on this thread.
    static HOST_READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The device-to-host reads learners have made on this thread so far (every read goes through
/// one function, which counts): a test of a device-resident loop compares it before and after.
pub fn host_reads() -> u64 {
    HOST_READS.with(std::cell::Cell::get)
}

/// Downloads a tensor's values to the host.
pub(crate) fn to_host<const D: usize>(t: Tensor<D>) -> Result<Vec<f32>, AlgoError> {
    HOST_READS.with(|reads| reads.set(reads.get() + 1));
    t.into_data().try_to_vec::<f32>().map_err(|e| AlgoError::Backend(format!("{e:?}")))
}
