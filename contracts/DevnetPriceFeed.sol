// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// A price feed for the local devnet only, read through the same interface as a Chainlink
/// aggregator (`AggregatorV3Interface`: `decimals`, `description`, `version`, `latestRoundData`),
/// so a price charge works on a fresh devnet as it does on a network with a real feed.
///
/// Its answer is the one it was deployed with, or the last `setAnswer` of its deployer, and it
/// reports it as updated at the block it is read at: an idle devnet mines no block for hours, and
/// a feed that aged with it would leave the devnet without a rate. A real feed's `updatedAt` is
/// its last report's, which is why the service checks that age everywhere else.
contract DevnetPriceFeed {
    address private immutable _deployer;
    uint8 public immutable decimals;
    string public description;
    uint256 public constant version = 4;
    int256 private _answer;
    uint80 private _round = 1;

    error NotDeployer();

    constructor(int256 answer, uint8 decimals_, string memory description_) {
        _deployer = msg.sender;
        _answer = answer;
        decimals = decimals_;
        description = description_;
    }

    /// A new answer, as a feed's next round (the deployer only).
    function setAnswer(int256 answer) external {
        if (msg.sender != _deployer) revert NotDeployer();
        _answer = answer;
        _round += 1;
    }

    function latestRoundData()
        external
        view
        returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
    {
        return (_round, _answer, block.timestamp, block.timestamp, _round);
    }
}
